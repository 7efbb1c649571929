//! speedscope's file format (https://www.speedscope.app/file-format-schema.json) for a sampling
//! run: one `sampled` profile per thread, whose samples are its distinct stacks (frame indices,
//! outermost first) weighted by their seconds (samples x interval). The frames are shared: a
//! sampled frame is a function at its executing line, so speedscope shows lines apart, as
//! py-spy's speedscope files do. A profile is named as the folded stacks name its thread. Distinct stacks are written once each, in the order first
//! sampled: the time-order view is not a timeline; the left-heavy and sandwich views are exact.
//! Strings are quoted by serde_json, as the timeline's speedscope writer does.

use std::io::{self, Write};

use super::profile::Profile;
use crate::core::format::json_str;

fn json_f64(w: &mut impl Write, v: f64) -> io::Result<()> {
    serde_json::to_writer(&mut *w, &v).map_err(io::Error::from)
}

/// Writes the run as a speedscope file named `title`. Pass a buffered writer: the file is
/// written in many small pieces.
pub fn write_speedscope(w: &mut impl Write, p: &Profile, title: &str) -> io::Result<()> {
    w.write_all(b"{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\",\"name\":")?;
    json_str(w, title)?;
    w.write_all(b",\"exporter\":")?;
    json_str(w, concat!("rprofile ", env!("CARGO_PKG_VERSION")))?;
    w.write_all(b",\"activeProfileIndex\":0,\"shared\":{\"frames\":[")?;
    // Every frame of the profile, in its order: a sample's frame ids are the file's indices.
    for (i, fr) in p.frames.iter().enumerate() {
        w.write_all(if i == 0 { b"\n" } else { b",\n" })?;
        let Some(f) = p.functions.get_index(fr.function as usize) else {
            w.write_all(b"{\"name\":\"?\"}")?;
            continue;
        };
        w.write_all(b"{\"name\":")?;
        json_str(w, &f.name)?;
        w.write_all(b",\"file\":")?;
        json_str(w, &f.filename)?;
        // No line: the instruction had none (speedscope's `line` is optional).
        if fr.line != 0 {
            write!(w, ",\"line\":{}", fr.line)?;
        }
        w.write_all(b"}")?;
    }
    w.write_all(b"]},\"profiles\":[")?;
    let mut first_profile = true;
    for (thread, mine) in p.stacks_by_thread().iter().enumerate() {
        if mine.is_empty() {
            continue;
        }
        let stacks = || mine.iter().filter_map(|&i| p.stacks.get_index(i));
        let total: u64 = stacks().map(|(_, c)| c.samples).sum();
        w.write_all(if first_profile { b"\n" } else { b",\n" })?;
        first_profile = false;
        w.write_all(b"{\"type\":\"sampled\",\"name\":")?;
        json_str(w, &p.thread_title(thread as u32))?;
        w.write_all(b",\"unit\":\"seconds\",\"startValue\":0,\"endValue\":")?;
        json_f64(w, total as f64 * p.interval)?;
        w.write_all(b",\"samples\":[")?;
        for (i, ((_, frames), _)) in stacks().enumerate() {
            w.write_all(if i == 0 { b"\n[" } else { b",\n[" })?;
            for (j, f) in frames.iter().enumerate() {
                if j == 0 {
                    write!(w, "{f}")?;
                } else {
                    write!(w, ",{f}")?;
                }
            }
            w.write_all(b"]")?;
        }
        w.write_all(b"],\"weights\":[")?;
        for (i, (_, c)) in stacks().enumerate() {
            if i != 0 {
                w.write_all(b",")?;
            }
            json_f64(w, c.samples as f64 * p.interval)?;
        }
        w.write_all(b"]}")?;
    }
    w.write_all(b"]}\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::samples::profile::tests::{function, sample, small, Refusing};
    use crate::samples::profile::Mode;
    use serde_json::Value;

    fn parsed(p: &Profile, title: &str) -> Value {
        let mut out = Vec::new();
        write_speedscope(&mut out, p, title).unwrap();
        serde_json::from_slice(&out).unwrap()
    }

    /// A sample's frames as `name:line` strings.
    fn stack(v: &Value, sample: &Value) -> Vec<String> {
        let frames = &v["shared"]["frames"];
        sample
            .as_array()
            .unwrap()
            .iter()
            .map(|i| {
                let f = &frames[i.as_u64().unwrap() as usize];
                format!("{}:{}", f["name"].as_str().unwrap(), f["line"])
            })
            .collect()
    }

    #[test]
    fn one_sampled_profile_per_thread_weighted_in_seconds() {
        let v = parsed(&small(), "prog.py");
        assert_eq!(v["name"], "prog.py");
        assert_eq!(v["shared"]["frames"].as_array().unwrap().len(), 6);
        assert_eq!(v["shared"]["frames"][0]["file"], "prog.py");
        let profiles = v["profiles"].as_array().unwrap();
        assert_eq!(profiles.len(), 2);
        let main = &profiles[0];
        assert_eq!(main["type"], "sampled");
        assert_eq!(main["name"], "MainThread (tid 100)");
        assert_eq!(main["unit"], "seconds");
        assert_eq!(main["endValue"], 0.004);
        let samples = main["samples"].as_array().unwrap();
        assert_eq!(stack(&v, &samples[0]), ["main:2", "f:11", "g:21"]);
        assert_eq!(stack(&v, &samples[1]), ["main:2", "f:12"]);
        assert_eq!(main["weights"], serde_json::json!([0.003, 0.001]));
        assert_eq!(profiles[1]["name"], "Thread (tid 101)");
        assert_eq!(profiles[1]["weights"], serde_json::json!([0.002]));
    }

    #[test]
    fn odd_names_empty_stacks_and_no_line_stay_valid_json() {
        let mut p = Profile::new(0.25, Mode::Wall);
        let odd = function(&mut p, "C:\\x \"y\"\n.py", 1, "<lambda>; \u{1f600}\u{0}");
        let t = p.thread(5, 5);
        p.threads[0].name = Some("w\"1".into());
        sample(&mut p, t, &[(odd, 0); 2], false);
        p.add(t, &[], false, 1);
        let v = parsed(&p, "t\u{e9}st\n");
        let f = &v["shared"]["frames"][0];
        assert_eq!(f["name"], "<lambda>; \u{1f600}\u{0}");
        assert_eq!(f["file"], "C:\\x \"y\"\n.py");
        assert!(f.get("line").is_none());
        let prof = &v["profiles"][0];
        assert_eq!(prof["name"], "w\"1 (tid 5)");
        assert_eq!(prof["samples"], serde_json::json!([[0, 0], []]));
        assert_eq!(prof["weights"], serde_json::json!([0.25, 0.25]));
        assert_eq!(prof["endValue"], 0.5);
    }

    #[test]
    fn an_empty_run_has_no_profiles() {
        let v = parsed(&Profile::new(0.001, Mode::Cpu), "");
        assert_eq!(v["profiles"], serde_json::json!([]));
        assert_eq!(v["shared"]["frames"], serde_json::json!([]));
    }

    #[test]
    fn a_writers_error_comes_back_with_its_os_code() {
        let e = write_speedscope(&mut Refusing(28), &small(), "t").unwrap_err();
        assert_eq!(e.raw_os_error(), Some(28));
    }
}
