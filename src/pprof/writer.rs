//! The one pprof writer: interns strings, functions and locations, and streams samples into
//! the gzip stream as they come (a protobuf message's repeated fields may be written in any
//! order and interleaved, so a million samples never sit in memory as messages). The tables
//! follow the samples at `finish`. Compressed at gzip's fastest level, as Go's runtime writes
//! its profiles: the tables are repetitive and compress well at that level anyway.

use std::io::{self, Write};

use flate2::write::GzEncoder;
use flate2::Compression;
use indexmap::IndexSet;
use prost::encoding::message;
use rustc_hash::FxBuildHasher;

use super::proto;

/// Profile tag numbers of the fields written one element at a time.
const SAMPLE: u32 = 2;
const LOCATION: u32 = 4;
const FUNCTION: u32 = 5;

/// Bytes of encoded samples gathered before they go to the compressor.
const CHUNK: usize = 1 << 16;

/// The one mapping every location belongs to.
const MAPPING_ID: u64 = 1;

/// What a profile's samples are: their value types (`(type, unit)`, in the order of each
/// sample's values), the one shown first, and for sampled profiles the period.
pub struct Header<'a> {
    pub sample_types: &'a [(&'a str, &'a str)],
    pub default_sample_type: &'a str,
    /// `((type, unit), amount)` one sample stands for.
    pub period: Option<((&'a str, &'a str), i64)>,
    pub duration_nanos: i64,
    /// Lines `go tool pprof -comments` shows: what the values mean, where they came from.
    pub comments: &'a [String],
}

/// A label of a sample (a string or a number under a key), its strings interned.
pub type Label = proto::Label;

/// Writes one gzipped pprof profile to `W`.
pub struct Writer<W: Write> {
    out: GzEncoder<W>,
    buf: Vec<u8>,
    strings: IndexSet<String, FxBuildHasher>,
    /// `(name, system name, file, first line)`, strings as indices: a function's id is its
    /// place + 1.
    functions: IndexSet<(i64, i64, i64, i64), FxBuildHasher>,
    /// `(function id, line)`: a location's id is its place + 1.
    locations: IndexSet<(u64, i64), FxBuildHasher>,
    head: proto::Profile,
    /// Reused for every sample, so that a sample allocates nothing once the vectors have grown.
    sample: proto::Sample,
}

impl<W: Write> Writer<W> {
    pub fn new(out: W, header: &Header<'_>) -> Writer<W> {
        let mut w = Writer {
            out: GzEncoder::new(out, Compression::fast()),
            buf: Vec::with_capacity(CHUNK + 1024),
            strings: IndexSet::default(),
            functions: IndexSet::default(),
            locations: IndexSet::default(),
            head: proto::Profile::default(),
            sample: proto::Sample::default(),
        };
        w.string("");
        let value_type = |w: &mut Writer<W>, (t, u): (&str, &str)| proto::ValueType {
            r#type: w.string(t),
            unit: w.string(u),
        };
        for &t in header.sample_types {
            let vt = value_type(&mut w, t);
            w.head.sample_type.push(vt);
        }
        w.head.default_sample_type = w.string(header.default_sample_type);
        if let Some((t, amount)) = header.period {
            w.head.period_type = Some(value_type(&mut w, t));
            w.head.period = amount;
        }
        w.head.duration_nanos = header.duration_nanos;
        for c in header.comments {
            let i = w.string(c);
            w.head.comment.push(i);
        }
        let filename = w.string("python");
        w.head.mapping.push(proto::Mapping {
            id: MAPPING_ID,
            filename,
            has_functions: true,
            has_filenames: true,
            has_line_numbers: true,
        });
        w
    }

    /// The string table index of `s`, added when new.
    pub fn string(&mut self, s: &str) -> i64 {
        if let Some(i) = self.strings.get_index_of(s) {
            return i as i64;
        }
        self.strings.insert_full(s.to_string()).0 as i64
    }

    /// The id of a Python function keyed as pstats keys it, `(file, first line, name)`. Its
    /// system name is pstats' `file:line(name)`: a name differing from it tells pprof the name
    /// is final (it would otherwise cut `<...>` out of `<module>` or `<lambda>`, taking them
    /// for C++ templates). A built-in (`('~', 0, '<built-in method len>')`) gets the name
    /// pstats prints for it, `{built-in method len}`, no file, and its own as system name.
    pub fn python_function(&mut self, file: &str, line: i64, name: &str) -> u64 {
        let key = if file == "~" && line == 0 {
            let shown = match name.strip_prefix('<').and_then(|n| n.strip_suffix('>')) {
                Some(inner) => self.string(&format!("{{{inner}}}")),
                None => self.string(name),
            };
            (shown, self.string(name), 0, 0)
        } else {
            let system = self.string(&format!("{file}:{line}({name})"));
            (self.string(name), system, self.string(file), line)
        };
        self.functions.insert_full(key).0 as u64 + 1
    }

    /// The id of the location at `line` of function `function` (an id from `function`).
    pub fn location(&mut self, function: u64, line: i64) -> u64 {
        self.locations.insert_full((function, line)).0 as u64 + 1
    }

    /// Writes a sample: its locations innermost first, one value per sample type, its labels.
    /// A sample whose values are all zero is left out: it adds nothing to any view.
    pub fn sample(
        &mut self,
        locations: &[u64],
        values: &[i64],
        labels: &[Label],
    ) -> io::Result<()> {
        if values.iter().all(|&v| v == 0) {
            return Ok(());
        }
        let s = &mut self.sample;
        s.location_id.clear();
        s.location_id.extend_from_slice(locations);
        s.value.clear();
        s.value.extend_from_slice(values);
        s.label.clear();
        s.label.extend_from_slice(labels);
        message::encode(SAMPLE, &self.sample, &mut self.buf);
        self.drain(false)
    }

    /// Hands the encoded bytes to the compressor once there are enough (or all of them).
    fn drain(&mut self, all: bool) -> io::Result<()> {
        if all || self.buf.len() >= CHUNK {
            self.out.write_all(&self.buf)?;
            self.buf.clear();
        }
        Ok(())
    }

    /// Writes the tables and the header and ends the gzip stream; gives the writer back.
    pub fn finish(mut self) -> io::Result<W> {
        let functions = std::mem::take(&mut self.functions);
        for (i, &(name, system_name, filename, start_line)) in functions.iter().enumerate() {
            let function = proto::Function {
                id: i as u64 + 1,
                name,
                system_name,
                filename,
                start_line,
            };
            message::encode(FUNCTION, &function, &mut self.buf);
            self.drain(false)?;
        }
        let mut location = proto::Location {
            id: 0,
            mapping_id: MAPPING_ID,
            line: vec![proto::Line::default()],
        };
        let locations = std::mem::take(&mut self.locations);
        for (i, &(function_id, line)) in locations.iter().enumerate() {
            location.id = i as u64 + 1;
            location.line[0] = proto::Line { function_id, line };
            message::encode(LOCATION, &location, &mut self.buf);
            self.drain(false)?;
        }
        self.head.string_table = std::mem::take(&mut self.strings).into_iter().collect();
        prost::Message::encode_raw(&self.head, &mut self.buf);
        self.drain(true)?;
        self.out.finish()
    }
}

/// Seconds as whole nanoseconds, rounding the running sum instead of each value: the values
/// of a profile then add up to its total time rounded once, however many there are.
#[derive(Default)]
pub struct Nanos {
    sum: f64,
    written: i64,
}

impl Nanos {
    pub fn of(&mut self, seconds: f64) -> i64 {
        self.sum += seconds * 1e9;
        let total = self.sum.round() as i64;
        let v = total - self.written;
        self.written = total;
        v
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use prost::Message;
    use std::io::Read;

    /// The profile in gzipped bytes `data`, decoded by prost.
    pub fn decode(data: &[u8]) -> proto::Profile {
        let mut raw = Vec::new();
        flate2::read::GzDecoder::new(data)
            .read_to_end(&mut raw)
            .expect("gzip");
        proto::Profile::decode(raw.as_slice()).expect("a profile")
    }

    /// The string at index `i` of `p`'s table.
    pub fn s(p: &proto::Profile, i: i64) -> &str {
        &p.string_table[i as usize]
    }

    /// Each sample as (function names innermost first, values).
    pub fn stacks(p: &proto::Profile) -> Vec<(Vec<String>, Vec<i64>)> {
        p.sample
            .iter()
            .map(|smp| {
                let names = smp
                    .location_id
                    .iter()
                    .map(|&l| {
                        let loc = &p.location[l as usize - 1];
                        assert_eq!(loc.id, l);
                        let f = &p.function[loc.line[0].function_id as usize - 1];
                        s(p, f.name).to_string()
                    })
                    .collect();
                (names, smp.value.clone())
            })
            .collect()
    }

    const HEADER: Header<'static> = Header {
        sample_types: &[("samples", "count"), ("wall", "nanoseconds")],
        default_sample_type: "wall",
        period: Some((("wall", "nanoseconds"), 1_000_000)),
        duration_nanos: 5,
        comments: &[],
    };

    #[test]
    fn what_is_written_decodes_to_the_same_profile() {
        let mut w = Writer::new(Vec::new(), &HEADER);
        let main = w.python_function("prog.py", 1, "main");
        let f = w.python_function("prog.py", 10, "f");
        assert_eq!(w.python_function("prog.py", 1, "main"), main);
        let (l_main, l_f) = (w.location(main, 3), w.location(f, 11));
        let key = w.string("thread");
        let name = w.string("MainThread");
        let label = Label {
            key,
            str: name,
            num: 0,
        };
        w.sample(&[l_f, l_main], &[2, 2_000_000], &[label]).unwrap();
        w.sample(&[l_main], &[0, 0], &[]).unwrap();
        w.sample(&[l_main], &[1, 1_000_000], &[]).unwrap();
        let p = decode(&w.finish().unwrap());
        assert_eq!(p.string_table[0], "");
        let types: Vec<(&str, &str)> = p
            .sample_type
            .iter()
            .map(|t| (s(&p, t.r#type), s(&p, t.unit)))
            .collect();
        assert_eq!(types, HEADER.sample_types);
        assert_eq!(s(&p, p.default_sample_type), "wall");
        assert_eq!(p.period, 1_000_000);
        assert_eq!(p.duration_nanos, 5);
        assert_eq!(
            stacks(&p),
            [
                (vec!["f".into(), "main".into()], vec![2, 2_000_000]),
                (vec!["main".into()], vec![1, 1_000_000]),
            ]
        );
        assert_eq!(s(&p, p.sample[0].label[0].key), "thread");
        assert_eq!(s(&p, p.sample[0].label[0].str), "MainThread");
        let f = &p.function[1];
        assert_eq!((f.id, s(&p, f.filename), f.start_line), (2, "prog.py", 10));
        assert_eq!(s(&p, f.system_name), "prog.py:10(f)");
        let loc = &p.location[1];
        assert_eq!((loc.id, loc.mapping_id, loc.line[0].line), (2, 1, 11));
        assert!(p.mapping[0].has_functions && p.mapping[0].id == 1);
    }

    #[test]
    fn many_samples_span_chunks() {
        let mut w = Writer::new(Vec::new(), &HEADER);
        let f = w.python_function("a.py", 1, "f");
        let l = w.location(f, 1);
        for i in 1..=20_000 {
            w.sample(&[l, l, l], &[i, i * 7], &[]).unwrap();
        }
        let p = decode(&w.finish().unwrap());
        assert_eq!(p.sample.len(), 20_000);
        let total: i64 = p.sample.iter().map(|s| s.value[1]).sum();
        assert_eq!(total, 7 * 20_000 * 20_001 / 2);
    }

    #[test]
    fn nanoseconds_add_up_to_the_rounded_total() {
        let mut n = Nanos::default();
        let parts: Vec<i64> = (0..10).map(|_| n.of(0.35e-9)).collect();
        assert_eq!(parts.iter().sum::<i64>(), 4); // 3.5 ns, rounded once
        assert!(parts.iter().all(|&v| v == 0 || v == 1));
        assert_eq!(Nanos::default().of(1.5), 1_500_000_000);
    }

    #[test]
    fn a_failing_writer_fails_the_write() {
        let refusing = crate::samples::profile::tests::Refusing(28);
        let mut w = Writer::new(refusing, &HEADER);
        let f = w.python_function("a.py", 1, "f");
        let l = w.location(f, 1);
        let mut failed = None;
        for i in 0..100_000 {
            if let Err(e) = w.sample(&[l], &[i + 1, i], &[]) {
                failed = Some(e);
                break;
            }
        }
        let e = match failed {
            Some(e) => e,
            None => w.finish().err().expect("an error"),
        };
        assert_eq!(e.raw_os_error(), Some(28));
    }
}
