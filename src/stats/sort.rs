//! `sort_stats`: pstats sorts rows `(cc, nc, tt, ct, file, line, name, std_name, func)` with a
//! stable sort comparing the selected fields in turn, each ascending or descending. The same
//! comparison here, on the model, with the same stable-sort guarantee.

use std::cmp::Ordering;

use super::model::Model;

/// The fields of pstats' sort rows, by their tuple index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Field {
    PrimCalls,
    Calls,
    TotTime,
    CumTime,
    File,
    Line,
    Name,
    StdName,
    Func,
}

impl Field {
    pub fn from_index(i: i64) -> Option<Field> {
        Some(match i {
            0 => Field::PrimCalls,
            1 => Field::Calls,
            2 => Field::TotTime,
            3 => Field::CumTime,
            4 => Field::File,
            5 => Field::Line,
            6 => Field::Name,
            7 => Field::StdName,
            8 => Field::Func,
            _ => return None,
        })
    }
}

/// pstats' comparison of one field: `l < r` gives `-direction`, `l > r` gives `direction`, and
/// neither (equal, or a NaN) goes on to the next field.
fn partial(o: Option<Ordering>) -> Ordering {
    o.unwrap_or(Ordering::Equal)
}

/// The stats rows' function ids in sorted order. `spec` is `(field, direction)` with direction
/// 1 for ascending and -1 for descending, most significant first.
pub fn sort(model: &Model, spec: &[(Field, i64)]) -> Vec<u32> {
    let ids: Vec<u32> = model.stats.keys().copied().collect();
    let std_names: Vec<Vec<u8>> = if spec.iter().any(|(f, _)| *f == Field::StdName) {
        ids.iter()
            .map(|&id| {
                let mut v = Vec::new();
                model.std_name(id, &mut v);
                v
            })
            .collect()
    } else {
        Vec::new()
    };
    let mut rows: Vec<usize> = (0..ids.len()).collect();
    rows.sort_by(|&a, &b| {
        let (ia, ib) = (ids[a], ids[b]);
        let (ra, rb) = (&model.stats[a], &model.stats[b]);
        let (fa, fb) = (model.func(ia), model.func(ib));
        for &(field, direction) in spec {
            let o = match field {
                Field::PrimCalls => ra.cc.cmp(&rb.cc),
                Field::Calls => ra.nc.cmp(&rb.nc),
                Field::TotTime => partial(ra.tt.partial_cmp(&rb.tt)),
                Field::CumTime => partial(ra.ct.partial_cmp(&rb.ct)),
                Field::File => model.string(fa.file).cmp(model.string(fb.file)),
                Field::Line => fa.line.cmp(&fb.line),
                Field::Name => model.string(fa.name).cmp(model.string(fb.name)),
                Field::StdName => std_names[a].cmp(&std_names[b]),
                Field::Func => func_order(model, ia, ib),
            };
            match o {
                Ordering::Equal => continue,
                o if direction < 0 => return o.reverse(),
                o if direction > 0 => return o,
                _ => return Ordering::Equal,
            }
        }
        Ordering::Equal
    });
    rows.into_iter().map(|r| ids[r]).collect()
}

/// Python's ordering of two `(file, line, name)` tuples (UTF-8 byte order is code point order).
pub fn func_order(model: &Model, a: u32, b: u32) -> Ordering {
    let (fa, fb) = (model.func(a), model.func(b));
    model
        .string(fa.file)
        .cmp(model.string(fb.file))
        .then(fa.line.cmp(&fb.line))
        .then_with(|| model.string(fa.name).cmp(model.string(fb.name)))
}
