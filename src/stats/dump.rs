//! The one writer of stats files: a model as the marshal bytes of its stats dict, readable by
//! `marshal.load` (and so by pstats and every tool built on it), for `Stats.dump_stats` and for
//! a profiler's `dump_stats`. Strings and key tuples are written once and referenced after, as
//! `marshal.dump` does with the objects a stats dict shares. A sampled model ends the dict with
//! `("__sampled__",): True`, where Python 3.15's sampling profiler puts it.

use super::model::{CallValue, Model, CT_INT, SAMPLED_KEY, TT_INT};
use crate::marshal::Writer;

fn time(w: &mut Writer, t: f64, int: bool) {
    if int {
        w.int(t as i64);
    } else {
        w.float(t);
    }
}

pub fn dump(model: &Model) -> Vec<u8> {
    let mut w = Writer::new();
    let mut refs: Vec<Option<u32>> = vec![None; model.strings.len()];
    let mut string = |w: &mut Writer, id: u32| match refs[id as usize] {
        Some(r) => w.reference(r),
        None => refs[id as usize] = w.str(model.string(id), true),
    };
    let mut key_refs: Vec<Option<u32>> = vec![None; model.funcs.len()];
    let mut key = |w: &mut Writer, id: u32| {
        if let Some(r) = key_refs[id as usize] {
            return w.reference(r);
        }
        key_refs[id as usize] = w.tuple(3, true);
        let f = model.func(id);
        string(w, f.file);
        w.int(f.line);
        string(w, f.name);
    };
    w.dict();
    for (&func, r) in &model.stats {
        key(&mut w, func);
        w.tuple(5, false);
        w.int(r.cc);
        w.int(r.nc);
        time(&mut w, r.tt, r.ints & TT_INT != 0);
        time(&mut w, r.ct, r.ints & CT_INT != 0);
        w.dict();
        for e in &r.callers {
            key(&mut w, e.func);
            match e.value {
                CallValue::Tuple {
                    nc,
                    cc,
                    tt,
                    ct,
                    ints,
                } => {
                    w.tuple(4, false);
                    w.int(nc);
                    w.int(cc);
                    time(&mut w, tt, ints & TT_INT != 0);
                    time(&mut w, ct, ints & CT_INT != 0);
                }
                CallValue::Count(n) => w.int(n),
            }
        }
        w.end_dict();
    }
    if model.sampled {
        w.tuple(1, false);
        w.str(SAMPLED_KEY, false);
        w.bool(true);
    }
    w.end_dict();
    w.buf
}
