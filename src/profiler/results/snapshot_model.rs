//! A profiler's totals as the Stats engine's model, by the rules of
//! `cProfile.Profile.snapshot_stats`: the one description of cProfile's stats dict that the
//! `.prof` file and the `stats` dict are both made from. Python-free (the caller names the
//! entries).

use crate::core::aggregator::Totals;
use crate::core::counters::EntryId;
use crate::stats::model::{CallValue, Edge, Model, Record};

/// Entries that `_lsprof` would list: ascending key order, never-completed ones skipped.
pub fn listed(agg: &Totals) -> Vec<EntryId> {
    agg.ids_by_key()
        .into_iter()
        .filter(|&i| agg.entries[i as usize].callcount != 0)
        .collect()
}

/// Fills `model`, which holds exactly the functions of `funcs` (the label of each entry of
/// `ids`, in that order) and no rows yet, with the rows of the listed entries: times as floats
/// (`factor` per timer unit); a repeated label keeps its first position and takes the later
/// entry's row; caller rows of one label are summed, later plus earlier, as cProfile adds them.
pub fn fill(model: &mut Model, agg: &Totals, factor: f64, ids: &[EntryId], funcs: &[u32]) {
    let mut func_of = vec![u32::MAX; agg.entries.len()];
    for (&id, &func) in ids.iter().zip(funcs) {
        func_of[id as usize] = func;
    }
    let labels_unique = model.funcs.len() == ids.len();

    // Each entry's callers dict (cProfile keeps one per entry; a label's row holds its last).
    let mut callers: Vec<Vec<Edge>> = vec![Vec::new(); agg.entries.len()];
    let calls = agg.calls_by_caller();
    for &id in ids {
        let func = func_of[id as usize];
        for &si in &calls[id as usize] {
            let s = &agg.subs[si as usize];
            if func_of[s.callee as usize] == u32::MAX {
                continue; // a callee that never completed has no callers dict
            }
            let (nc, cc) = (s.callcount, s.callcount - s.reccallcount);
            let (tt, ct) = (factor * s.it as f64, factor * s.tt as f64);
            let list = &mut callers[s.callee as usize];
            if !labels_unique {
                if let Some(prev) = list.iter_mut().find(|e| e.func == func) {
                    if let CallValue::Tuple {
                        nc: pnc,
                        cc: pcc,
                        tt: ptt,
                        ct: pct,
                        ..
                    } = prev.value
                    {
                        prev.value = CallValue::floats(nc + pnc, cc + pcc, tt + ptt, ct + pct);
                    }
                    continue;
                }
            }
            list.push(Edge {
                func,
                value: CallValue::floats(nc, cc, tt, ct),
            });
        }
    }

    model.stats.reserve(model.funcs.len());
    for (&id, &func) in ids.iter().zip(funcs) {
        let e = &agg.entries[id as usize];
        let row = Record {
            cc: e.callcount - e.reccallcount,
            nc: e.callcount,
            tt: factor * e.it as f64,
            ct: factor * e.tt as f64,
            ints: 0,
            callers: std::mem::take(&mut callers[id as usize]),
        };
        // An existing key keeps its place and takes the new row, as a dict's does.
        model.stats.insert(func, row);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::counters::{Counters, Entry, SubEntry};

    fn entry(key: usize, callcount: i64, tt: i64) -> Entry {
        Entry {
            key,
            counts: Counters {
                tt,
                it: tt / 2,
                callcount,
                ..Default::default()
            },
        }
    }

    fn sub(caller: EntryId, callee: EntryId, callcount: i64) -> SubEntry {
        SubEntry {
            caller,
            callee,
            counts: Counters {
                tt: 4,
                it: 2,
                callcount,
                ..Default::default()
            },
        }
    }

    #[test]
    fn repeated_labels_keep_the_first_place_the_last_row_and_summed_callers() {
        // Entries 0 and 2 share label "f"; 1 ("g") calls both; 3 never completed.
        let agg = Totals {
            entries: vec![
                entry(10, 1, 8),
                entry(20, 2, 6),
                entry(30, 3, 4),
                entry(40, 0, 0),
            ],
            subs: vec![sub(1, 0, 1), sub(1, 2, 5), sub(1, 3, 1), sub(0, 1, 7)],
        };
        let ids = listed(&agg);
        assert_eq!(ids, [0, 1, 2]);
        let mut m = Model::default();
        let f = m.func_id(b"a.py", 1, b"f");
        let g = m.func_id(b"a.py", 2, b"g");
        fill(&mut m, &agg, 0.5, &ids, &[f, g, f]);
        assert_eq!(m.stats.keys().copied().collect::<Vec<_>>(), [f, g]);
        let row = &m.stats[&f];
        // Entry 2's row; its callers only (entry 0's dict is not in the stats).
        assert_eq!((row.cc, row.nc, row.tt, row.ct), (3, 3, 1.0, 2.0));
        assert_eq!(row.callers.len(), 1);
        assert_eq!(row.callers[0].func, g);
        assert_eq!(row.callers[0].value, CallValue::floats(5, 5, 1.0, 2.0));
        let row = &m.stats[&g];
        assert_eq!(row.callers[0].value, CallValue::floats(7, 7, 1.0, 2.0));
    }

    #[test]
    fn callers_of_one_label_are_added_up() {
        // Entries 0 and 1 share label "f" and both call "g" (entry 2).
        let agg = Totals {
            entries: vec![entry(10, 1, 8), entry(20, 1, 8), entry(30, 2, 4)],
            subs: vec![sub(0, 2, 1), sub(1, 2, 1)],
        };
        let ids = listed(&agg);
        let mut m = Model::default();
        let f = m.func_id(b"a.py", 1, b"f");
        let g = m.func_id(b"a.py", 2, b"g");
        fill(&mut m, &agg, 1.0, &ids, &[f, f, g]);
        let row = &m.stats[&g];
        assert_eq!(row.callers.len(), 1);
        assert_eq!(row.callers[0].value, CallValue::floats(2, 2, 4.0, 8.0));
    }
}
