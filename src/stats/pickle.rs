//! A Stats model as a pickle payload (`payload`'s frame, serde-pickle's bytes) and back: what
//! `rprofile.Stats` objects and profiler snapshots pickle as. Columns, not a dict of tuples:
//! every string once (one bytes object and the lengths), every function once (file, line and
//! name as string ids), rows and caller edges as parallel lists of ids, counts and times, so a
//! profile of 100,000 functions is a few dozen lists. Also carried: the sampled flag, the sort
//! order (`fcn_list`) and the callee lists, which are remade on arrival when they are the ones
//! the rows give, and written out only when they are older than the rows (after `add`, as
//! pstats keeps them). Python-free.

use serde::{Deserialize, Serialize};

use super::model::{CallValue, Callees, Edge, Func, Model, Record};
use super::payload::{self, error, ints, same_lengths, Blob, Error, Floats, Int};
use crate::marshal::read::valid_utf8_surrogatepass;

/// What a payload is, and the version of its layout: a payload of another format is refused
/// with a message saying so. Bump `FORMAT` with any change to `Body`.
pub const KIND: &str = "rprofile.stats";
pub const FORMAT: u32 = 1;

/// An edge's `kind` byte: the model's `ints` bits (`TT_INT`, `CT_INT`), and this bit for the
/// `profile` module's plain call count (held in `nc`).
const COUNT: u8 = 4;

/// The four figures of rows or edges, one column each: call counts and times.
#[derive(Serialize, Deserialize)]
struct Figures {
    nc: Vec<Int>,
    cc: Vec<Int>,
    tt: Floats,
    ct: Floats,
}

impl Figures {
    fn with_capacity(n: usize) -> Figures {
        Figures {
            nc: Vec::with_capacity(n),
            cc: Vec::with_capacity(n),
            tt: Floats(Vec::with_capacity(n)),
            ct: Floats(Vec::with_capacity(n)),
        }
    }

    fn push(&mut self, nc: i64, cc: i64, tt: f64, ct: f64) {
        self.nc.push(Int(nc));
        self.cc.push(Int(cc));
        self.tt.0.push(tt);
        self.ct.0.push(ct);
    }

    /// Checks that every column has `n` entries.
    fn check(&self, table: &str, n: usize) -> Result<(), Error> {
        let lens = [
            self.nc.len(),
            self.cc.len(),
            self.tt.0.len(),
            self.ct.0.len(),
        ];
        same_lengths(table, n, &lens)
    }

    /// `(nc, cc, tt, ct)` of entry `i` (checked to exist).
    fn get(&self, i: usize) -> (i64, i64, f64, f64) {
        (self.nc[i].0, self.cc[i].0, self.tt.0[i], self.ct.0[i])
    }
}

/// Caller (or callee) edges of consecutive owners: `counts[i]` edges belong to the i-th.
#[derive(Serialize, Deserialize)]
struct Edges {
    counts: Vec<Int>,
    func: Vec<Int>,
    figures: Figures,
    /// Per edge, or None when every one is 0 (float times, a cProfile tuple).
    kind: Option<Blob>,
}

/// Callee lists that the rows no longer give: the dict's keys in order, each with its list.
#[derive(Serialize, Deserialize)]
struct CalleeLists {
    rows: Int,
    order: Vec<Int>,
    lists: Edges,
}

#[derive(Serialize, Deserialize)]
struct Body {
    /// Every string, concatenated, and each one's length.
    strings: Blob,
    string_lens: Vec<Int>,
    /// Every function (id = position): string ids and line.
    func_file: Vec<Int>,
    func_line: Vec<Int>,
    func_name: Vec<Int>,
    /// The stats dict's rows in its order: function id, figures, the `ints` bits (per row, or
    /// None when every one is 0: float times).
    rows: Vec<Int>,
    figures: Figures,
    row_ints: Option<Blob>,
    callers: Edges,
    sampled: bool,
    /// The sort order, as function ids.
    order: Option<Vec<Int>>,
    /// 0: no callee lists; 1: made from these rows (remade on loading); 2: `callee_lists`.
    callees: Int,
    callee_lists: Option<CalleeLists>,
}

/// A Stats model with the views a Stats object keeps of it.
#[derive(Debug, Default)]
pub struct Pickled {
    pub model: Model,
    /// The sort order (`fcn_list`), if there is one.
    pub order: Option<Vec<u32>>,
    /// `all_callees`, if made.
    pub callees: Option<Callees>,
}

impl Edges {
    fn with_capacity(owners: usize, edges: usize) -> Edges {
        Edges {
            counts: Vec::with_capacity(owners),
            func: Vec::with_capacity(edges),
            figures: Figures::with_capacity(edges),
            kind: Some(Blob(Vec::with_capacity(edges))),
        }
    }

    /// Appends the edges of one owner.
    fn push(&mut self, edges: &[Edge]) {
        self.counts.push(Int(edges.len() as i64));
        for e in edges {
            self.func.push(Int(e.func as i64));
            let kind = match e.value {
                CallValue::Tuple {
                    nc,
                    cc,
                    tt,
                    ct,
                    ints,
                } => {
                    self.figures.push(nc, cc, tt, ct);
                    ints
                }
                CallValue::Count(n) => {
                    self.figures.push(n, 0, 0.0, 0.0);
                    COUNT
                }
            };
            if let Some(k) = &mut self.kind {
                k.0.push(kind);
            }
        }
    }

    /// Each owner's edges, checked against `funcs` functions.
    fn lists(&self, funcs: usize) -> Result<Vec<Vec<Edge>>, Error> {
        let n = self.func.len();
        let kinds = self.kind.as_ref().map(|k| &k.0[..]);
        self.figures.check("edge", n)?;
        same_lengths("edge", n, &[kinds.map_or(n, <[u8]>::len)])?;
        let mut out = Vec::with_capacity(self.counts.len());
        let mut at = 0usize;
        for c in &self.counts {
            let c = c.len("edge count")?;
            let end = match at.checked_add(c) {
                Some(end) if end <= n => end,
                _ => return error("more edges counted than written"),
            };
            let mut list = Vec::with_capacity(c);
            for i in at..end {
                let (nc, cc, tt, ct) = self.figures.get(i);
                let value = match kinds.map_or(0, |k| k[i]) {
                    COUNT => CallValue::Count(nc),
                    ints @ 0..=3 => CallValue::Tuple {
                        nc,
                        cc,
                        tt,
                        ct,
                        ints,
                    },
                    k => return error(format!("unknown edge kind {k}")),
                };
                list.push(Edge {
                    func: self.func[i].index(funcs, "function id")?,
                    value,
                });
            }
            out.push(list);
            at = end;
        }
        if at != n {
            return error("edges written beyond the counted ones");
        }
        Ok(out)
    }
}

/// The payload of `model` with its sort order and callee lists.
pub fn to_bytes(model: &Model, order: Option<&[u32]>, callees: Option<&Callees>) -> Vec<u8> {
    let string_lens = ints(model.strings.iter().map(|s| s.len() as i64));
    let mut strings = Vec::with_capacity(string_lens.iter().map(|l| l.0 as usize).sum());
    for s in &model.strings {
        strings.extend_from_slice(s);
    }
    let rows = model.stats.len();
    let edges = model.stats.values().map(|r| r.callers.len()).sum();
    let mut body = Body {
        strings: Blob(strings),
        string_lens,
        func_file: ints(model.funcs.iter().map(|f| f.file as i64)),
        func_line: ints(model.funcs.iter().map(|f| f.line)),
        func_name: ints(model.funcs.iter().map(|f| f.name as i64)),
        rows: ints(model.stats.keys().map(|&f| f as i64)),
        figures: Figures::with_capacity(rows),
        row_ints: Some(Blob(model.stats.values().map(|r| r.ints).collect())),
        callers: Edges::with_capacity(rows, edges),
        sampled: model.sampled,
        order: order.map(|o| ints(o.iter().map(|&f| f as i64))),
        callees: Int(0),
        callee_lists: None,
    };
    for r in model.stats.values() {
        body.figures.push(r.nc, r.cc, r.tt, r.ct);
        body.callers.push(&r.callers);
    }
    if let Some(c) = callees {
        if *c == model.callees() {
            body.callees = Int(1);
        } else {
            let mut lists = Edges::with_capacity(c.order.len(), 0);
            for &f in &c.order {
                lists.push(c.of(f));
            }
            body.callees = Int(2);
            body.callee_lists = Some(CalleeLists {
                rows: Int(c.rows() as i64),
                order: ints(c.order.iter().map(|&f| f as i64)),
                lists,
            });
        }
    }
    none_if_zero(&mut body.row_ints);
    none_if_zero(&mut body.callers.kind);
    if let Some(c) = &mut body.callee_lists {
        none_if_zero(&mut c.lists.kind);
    }
    payload::write(KIND, FORMAT, &body)
}

fn none_if_zero(b: &mut Option<Blob>) {
    if b.as_ref().is_some_and(|b| b.0.iter().all(|&k| k == 0)) {
        *b = None;
    }
}

/// The model (and views) of a payload; an `Error` saying what is wrong with anything else.
pub fn from_bytes(data: &[u8]) -> Result<Pickled, Error> {
    let body: Body = payload::read(data, KIND, FORMAT)?;
    let mut model = Model::default();
    model.sampled = body.sampled;
    let mut at = 0usize;
    model.strings.reserve(body.string_lens.len());
    for (i, len) in body.string_lens.iter().enumerate() {
        let len = len.len("string length")?;
        let Some(s) = at
            .checked_add(len)
            .and_then(|end| body.strings.0.get(at..end))
        else {
            return error("string lengths beyond the strings");
        };
        // Names become Python str: UTF-8, lone surrogates as surrogatepass writes them.
        if std::str::from_utf8(s).is_err() && !valid_utf8_surrogatepass(s) {
            return error("a string that is not UTF-8");
        }
        if model.intern(s) as usize != i {
            return error("a string written twice");
        }
        at += len;
    }
    if at != body.strings.0.len() {
        return error("strings beyond their lengths");
    }
    let n = body.func_file.len();
    same_lengths("function", n, &[body.func_line.len(), body.func_name.len()])?;
    let strings = model.strings.len();
    for i in 0..n {
        let f = Func {
            file: body.func_file[i].index(strings, "string id")?,
            line: body.func_line[i].0,
            name: body.func_name[i].index(strings, "string id")?,
        };
        if model.func_of(f) as usize != i {
            return error("a function written twice");
        }
    }
    let rows = body.rows.len();
    let row_ints = body.row_ints.as_ref().map(|b| &b.0[..]);
    body.figures.check("row", rows)?;
    let lens = [
        body.callers.counts.len(),
        row_ints.map_or(rows, <[u8]>::len),
    ];
    same_lengths("row", rows, &lens)?;
    let callers = body.callers.lists(n)?;
    model.stats.reserve(rows);
    for (i, callers) in callers.into_iter().enumerate() {
        let func = body.rows[i].index(n, "function id")?;
        let ints = row_ints.map_or(0, |b| b[i]);
        if ints > 3 {
            return error(format!("unknown row kind {ints}"));
        }
        let (nc, cc, tt, ct) = body.figures.get(i);
        let rec = Record {
            cc,
            nc,
            tt,
            ct,
            ints,
            callers,
        };
        if model.stats.insert(func, rec).is_some() {
            return error("a row written twice");
        }
    }
    let order = match &body.order {
        Some(o) => Some(
            o.iter()
                .map(|f| f.index(n, "function id"))
                .collect::<Result<Vec<u32>, Error>>()?,
        ),
        None => None,
    };
    let callees = match (body.callees.0, body.callee_lists) {
        (0, None) => None,
        (1, None) => Some(model.callees()),
        (2, Some(c)) => {
            let lists = c.lists.lists(n)?;
            if lists.len() != c.order.len() {
                return error("callee lists and their functions differ in number");
            }
            let mut by_func: Vec<Vec<Edge>> = vec![Vec::new(); n];
            let mut seen = vec![false; n];
            let mut order = Vec::with_capacity(c.order.len());
            for (f, list) in c.order.iter().zip(lists) {
                let f = f.index(n, "function id")?;
                if std::mem::replace(&mut seen[f as usize], true) {
                    return error("a callee list written twice");
                }
                by_func[f as usize] = list;
                order.push(f);
            }
            let rows = c.rows.len("row count")?;
            Some(Callees::from_lists(order, &by_func, rows, n))
        }
        _ => return error("bad callee lists"),
    };
    Ok(Pickled {
        model,
        order,
        callees,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::model::{CT_INT, TT_INT};

    fn sample() -> Model {
        let mut m = Model::default();
        let f = m.func_id(b"/a/x.py", 1, b"f");
        let g = m.func_id(b"/a/x.py", 9, b"g");
        let b = m.func_id(b"~", 0, b"<built-in method len>");
        // A name as surrogatepass writes a lone surrogate: bytes, not UTF-8.
        let s = m.func_id(b"/b/y.py", -2, b"h\xed\xa0\x80");
        let edge = |func, value| Edge { func, value };
        m.stats.insert(
            g,
            Record {
                cc: 3,
                nc: 5,
                tt: 0.25,
                ct: f64::NAN,
                ints: 0,
                callers: vec![
                    edge(f, CallValue::floats(2, 1, 0.125, 0.5)),
                    edge(s, CallValue::Count(7)),
                ],
            },
        );
        m.stats.insert(
            b,
            Record {
                cc: i64::MAX,
                nc: -1,
                tt: 3.0,
                ct: -0.0,
                ints: TT_INT | CT_INT,
                callers: vec![edge(
                    g,
                    CallValue::Tuple {
                        nc: 1 << 40,
                        cc: 0,
                        tt: 2.0,
                        ct: 1e300,
                        ints: CT_INT,
                    },
                )],
            },
        );
        m.stats.insert(
            f,
            Record {
                cc: 1,
                nc: 1,
                tt: 0.0,
                ct: 0.0,
                ints: 0,
                callers: vec![],
            },
        );
        m.sampled = true;
        m
    }

    /// Everything a model holds, in a form that compares (NaN by its bits).
    fn shape(m: &Model) -> String {
        let rows: Vec<String> = m
            .stats
            .iter()
            .map(|(f, r)| {
                format!(
                    "{f} {} {} {:x} {:x} {} {:?}",
                    r.cc,
                    r.nc,
                    r.tt.to_bits(),
                    r.ct.to_bits(),
                    r.ints,
                    r.callers
                        .iter()
                        .map(|e| match e.value {
                            CallValue::Tuple { tt, ct, .. } => format!(
                                "{} {:?} {:x} {:x}",
                                e.func,
                                e.value,
                                tt.to_bits(),
                                ct.to_bits()
                            ),
                            v => format!("{} {v:?}", e.func),
                        })
                        .collect::<Vec<_>>()
                )
            })
            .collect();
        format!("{:?} {:?} {:?} {}", m.strings, m.funcs, rows, m.sampled)
    }

    #[test]
    fn a_model_reads_back_equal_with_its_order_and_callees() {
        let m = sample();
        let order = vec![2, 0, 3];
        let data = to_bytes(&m, Some(&order[..]), Some(&m.callees()));
        let p = from_bytes(&data).unwrap();
        assert_eq!(shape(&p.model), shape(&m));
        assert_eq!(p.order, Some(order));
        assert_eq!(p.callees, Some(m.callees()));
        // Function ids still find their keys.
        assert_eq!(
            p.model.find_func(b"/a/x.py", 9, b"g"),
            m.find_func(b"/a/x.py", 9, b"g")
        );
        let bare = from_bytes(&to_bytes(&m, None, None)).unwrap();
        assert!(bare.order.is_none() && bare.callees.is_none());
    }

    #[test]
    fn float_times_alone_write_no_kind_bytes() {
        let mut m = Model::default();
        let f = m.func_id(b"a.py", 1, b"f");
        let g = m.func_id(b"a.py", 2, b"g");
        let row = |callers| Record {
            cc: 1,
            nc: 1,
            tt: 0.5,
            ct: 0.5,
            ints: 0,
            callers,
        };
        m.stats.insert(f, row(vec![]));
        m.stats.insert(
            g,
            row(vec![Edge {
                func: f,
                value: CallValue::floats(1, 1, 0.5, 0.5),
            }]),
        );
        let data = to_bytes(&m, None, None);
        let body: Body = payload::read(&data, KIND, FORMAT).unwrap();
        assert!(body.row_ints.is_none() && body.callers.kind.is_none());
        assert_eq!(shape(&from_bytes(&data).unwrap().model), shape(&m));
        let mut mixed = m.clone();
        mixed.stats[1].ints = TT_INT;
        let back = from_bytes(&to_bytes(&mixed, None, None)).unwrap().model;
        assert_eq!(shape(&back), shape(&mixed));
    }

    #[test]
    fn callee_lists_older_than_the_rows_are_written_out() {
        let mut m = sample();
        let old = m.callees();
        // New rows after the lists were made (pstats keeps the old lists through `add`).
        let mut other = Model::default();
        let k = other.func_id(b"z.py", 1, b"k");
        let f = other.func_id(b"/a/x.py", 1, b"f");
        other.stats.insert(
            f,
            Record {
                cc: 1,
                nc: 1,
                tt: 1.0,
                ct: 1.0,
                ints: 0,
                callers: vec![Edge {
                    func: k,
                    value: CallValue::floats(1, 1, 1.0, 1.0),
                }],
            },
        );
        m.add(&other).unwrap();
        assert_ne!(old, m.callees());
        let fresh = to_bytes(&m, None, Some(&m.callees()));
        let stale = to_bytes(&m, None, Some(&old));
        assert!(stale.len() > fresh.len());
        let p = from_bytes(&stale).unwrap();
        let got = p.callees.unwrap();
        for f in 0..m.funcs.len() as u32 {
            assert_eq!(got.of(f), old.of(f));
        }
        assert_eq!(
            (got.order.clone(), got.rows()),
            (old.order.clone(), old.rows())
        );
    }

    #[test]
    fn bad_payloads_are_errors() {
        let m = sample();
        let data = to_bytes(&m, Some(&[0u32, 1][..]), Some(&m.callees()));
        payload::tests::cuts_fail_and_flips_do_not_panic(&data, from_bytes);
        // Well-formed pickles of the wrong shape: ids out of range, columns that disagree.
        let mut body: Body = payload::read(&data, KIND, FORMAT).unwrap();
        body.rows[0] = Int(99);
        let e = from_bytes(&payload::write(KIND, FORMAT, &body)).unwrap_err();
        assert!(e.0.contains("function id 99 out of range"), "{e}");
        let mut body: Body = payload::read(&data, KIND, FORMAT).unwrap();
        body.figures.tt.0.pop();
        let e = from_bytes(&payload::write(KIND, FORMAT, &body)).unwrap_err();
        assert_eq!(e.0, "row columns of different lengths");
        let mut body: Body = payload::read(&data, KIND, FORMAT).unwrap();
        body.func_file[1] = body.func_file[0];
        body.func_line[1] = body.func_line[0];
        body.func_name[1] = body.func_name[0];
        let e = from_bytes(&payload::write(KIND, FORMAT, &body)).unwrap_err();
        assert_eq!(e.0, "a function written twice");
    }
}
