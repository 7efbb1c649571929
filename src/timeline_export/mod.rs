//! The timeline's exports (`Profile(timeline=True)`; `Timeline.to_chrome_trace` and
//! `to_speedscope`): the events of `core::timeline` written as files other tools open, streamed
//! without a Python object per event. Python-free:
//!
//! - `chrome`: Chrome's trace-event JSON (Perfetto, `chrome://tracing`): a slice per call, and
//!   the memory and RSS counters;
//! - `speedscope`: speedscope's evented profiles, one per thread.
//!
//! Both name functions and threads through [`Names`].

pub mod chrome;
pub mod speedscope;

/// How an export names functions and threads and converts times.
pub struct Names<'a> {
    /// Each key's display name, file and first line (a builtin: file "~", line 0).
    pub function: &'a dyn Fn(usize) -> (&'a str, &'a str, i64),
    /// Each thread index's lane id (the interpreter's thread id) and name.
    pub threads: &'a [(u64, String)],
    /// Seconds per timer unit.
    pub seconds_per_unit: f64,
    /// Process id for the Chrome trace.
    pub pid: u32,
}

#[cfg(test)]
mod tests {
    use std::io::{self, Write};

    use super::chrome::{write_chrome, Counters};
    use super::speedscope::write_speedscope;
    use super::*;
    use crate::core::format::json_str;
    use crate::core::timeline::{
        spans, Event, Timeline, WhenFull, ENTER, FREE, LEAVE, MALLOC, OBJECT_FREE, OBJECT_NEW,
    };

    /// `n` events of one thread: the calls and returns of keys 100, 101, ... at times 0, 1, ...
    fn calls(n: usize) -> Vec<Event> {
        let mut tl = Timeline::new(n.max(1), WhenFull::KeepNewest);
        tl.set_thread(7, 7);
        for i in 0..n {
            let kind = if i % 2 == 0 { ENTER } else { LEAVE };
            tl.record(kind, i as i64, 100 + i / 2, 0);
        }
        tl.iter().copied().collect()
    }

    fn names_for<'a>(
        f: &'a dyn Fn(usize) -> (&'a str, &'a str, i64),
        th: &'a [(u64, String)],
    ) -> Names<'a> {
        Names {
            function: f,
            threads: th,
            seconds_per_unit: 1e-9,
            pid: 1,
        }
    }

    #[test]
    fn exports_are_json_with_one_slice_per_call() {
        let f = |k: usize| {
            if k == 101 {
                ("len", "~", 0)
            } else {
                ("f \"q\"", "a.py", 3)
            }
        };
        let th = [(42u64, "MainThread".to_string())];
        let names = names_for(&f, &th);
        let mut out = Vec::new();
        let ev = calls(6);
        let none = Counters {
            memory_base: 0,
            rss: &[],
            types: &[],
        };
        write_chrome(&mut out, &ev, 0, &none, &names).unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        let evs = v["traceEvents"].as_array().unwrap();
        let slices: Vec<_> = evs.iter().filter(|e| e["ph"] == "X").collect();
        assert_eq!(slices.len(), 3);
        assert_eq!(slices[1]["cat"], "builtin");
        assert_eq!(slices[0]["name"], "f \"q\"");
        assert_eq!(slices[2]["ts"].as_f64(), Some(0.004));
        assert_eq!(slices[2]["dur"].as_f64(), Some(0.001));
        assert!(evs
            .iter()
            .any(|e| e["ph"] == "M" && e["args"]["name"] == "MainThread"));

        let mut out = Vec::new();
        write_speedscope(&mut out, &ev, &names, "t").unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        let p = &v["profiles"][0];
        assert_eq!(p["events"].as_array().unwrap().len(), 6);
        assert_eq!(v["shared"]["frames"].as_array().unwrap().len(), 3);
        assert_eq!(p["endValue"], 5);
    }

    /// A writer that refuses every write with the OS error `errno`.
    struct Refusing(i32);

    impl Write for Refusing {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            Err(io::Error::from_raw_os_error(self.0))
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_writers_error_comes_back_with_its_os_code() {
        let got = json_str(&mut Refusing(28), "name").map_err(|e| e.raw_os_error());
        assert_eq!(got, Err(Some(28)));
        let ev = calls(4);
        let f = |_: usize| ("f", "a.py", 1);
        let th = [(1u64, "MainThread".to_string())];
        let names = names_for(&f, &th);
        let none = Counters {
            memory_base: 0,
            rss: &[],
            types: &[],
        };
        let chrome = write_chrome(&mut Refusing(27), &ev, 0, &none, &names);
        assert_eq!(chrome.map_err(|e| e.raw_os_error()), Err(Some(27)));
        let speedscope = write_speedscope(&mut Refusing(5), &ev, &names, "t");
        assert_eq!(speedscope.map_err(|e| e.raw_os_error()), Err(Some(5)));
    }

    /// The events of one call (entered at 0, left at 4000) on one thread, with what `inside`
    /// records between.
    fn one_call(inside: impl FnOnce(&mut Timeline)) -> Vec<Event> {
        let mut tl = Timeline::new(100, WhenFull::KeepNewest);
        tl.set_thread(1, 1);
        tl.record(ENTER, 0, 10, 0);
        inside(&mut tl);
        tl.record(LEAVE, 4000, 10, 0);
        tl.iter().copied().collect()
    }

    #[test]
    fn memory_events_are_counters_not_slices() {
        let ev = one_call(|tl| {
            tl.record_memory(MALLOC, 1000, 10, 64, None);
            tl.record_memory(MALLOC, 1500, 10, 64, None); // same microsecond: one counter value
            tl.record_memory(FREE, 3000, 10, 64, None);
        });
        assert_eq!(spans(&ev).len(), 1);
        let f = |_: usize| ("f", "a.py", 1);
        let th = [(1u64, "MainThread".to_string())];
        let names = names_for(&f, &th);
        let rss = [(500i64, 4096u64), (3500, 8192)];
        let counters = Counters {
            memory_base: 10,
            rss: &rss,
            types: &[],
        };
        let mut out = Vec::new();
        write_chrome(&mut out, &ev, 0, &counters, &names).unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        let evs = v["traceEvents"].as_array().unwrap();
        let mem: Vec<(f64, i64)> = evs
            .iter()
            .filter(|e| e["ph"] == "C" && e["name"] == "memory")
            .map(|e| {
                (
                    e["ts"].as_f64().unwrap(),
                    e["args"]["tracked bytes"].as_i64().unwrap(),
                )
            })
            .collect();
        assert_eq!(mem, vec![(1.5, 138), (3.0, 74)]);
        let rss: Vec<i64> = evs
            .iter()
            .filter(|e| e["ph"] == "C" && e["name"] == "rss")
            .map(|e| e["args"]["bytes"].as_i64().unwrap())
            .collect();
        assert_eq!(rss, vec![4096, 8192]);
        let mut out = Vec::new();
        write_speedscope(&mut out, &ev, &names, "t").unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v["profiles"][0]["events"].as_array().unwrap().len(), 2);
        assert_eq!(v["shared"]["frames"].as_array().unwrap().len(), 1);
    }

    #[test]
    fn object_events_are_a_counter_per_type_and_no_slice() {
        let ev = one_call(|tl| {
            tl.record_object(OBJECT_NEW, 1000, 10, 1, None);
            tl.record_object(OBJECT_NEW, 2000, 10, 1, None);
            tl.record_object(OBJECT_NEW, 2500, 10, 0, None);
            tl.record_object(OBJECT_FREE, 3000, 10, 1, None);
            tl.record_object(OBJECT_FREE, 3500, 10, 7, None); // a type not named: no counter
        });
        assert_eq!(spans(&ev).len(), 1);
        let f = |_: usize| ("f", "a.py", 1);
        let th = [(1u64, "MainThread".to_string())];
        let names = names_for(&f, &th);
        let types = ["A".to_string(), "B \"quoted\"".to_string()];
        let counters = Counters {
            memory_base: 0,
            rss: &[],
            types: &types,
        };
        let mut out = Vec::new();
        write_chrome(&mut out, &ev, 0, &counters, &names).unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        let evs = v["traceEvents"].as_array().unwrap();
        let of = |name: &str| -> Vec<i64> {
            evs.iter()
                .filter(|e| e["ph"] == "C" && e["name"] == name)
                .map(|e| e["args"]["alive"].as_i64().unwrap())
                .collect()
        };
        assert_eq!(of("objects: B \"quoted\""), vec![1, 2, 1]);
        assert_eq!(of("objects: A"), vec![1]);
        assert_eq!(evs.iter().filter(|e| e["ph"] == "X").count(), 1);
        assert!(!evs.iter().any(|e| e["name"] == "memory"));
        let mut out = Vec::new();
        write_speedscope(&mut out, &ev, &names, "t").unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v["profiles"][0]["events"].as_array().unwrap().len(), 2);
    }
}
