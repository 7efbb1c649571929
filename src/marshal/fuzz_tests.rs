//! Property-based fuzzing of the marshal reader (`read`); see `fuzz/README.md`, which also covers
//! the libFuzzer target that fuzzes the same function.
//!
//! Every property reads its input on a fresh thread with a small stack (what a release build
//! needs at the reader's nesting limit, with a margin) under a deadline, so that "never panics"
//! also covers stack overflow and "always terminates" is checked: a read that takes longer than
//! [`DEADLINE`] prints the input and aborts the test process.
//!
//! Properties:
//! - random bytes (uniform, and drawn from the type codes and small ints that marshal uses):
//!   `read` returns `Ok` or an `Error` and is self-consistent (`compare::check_consistent`);
//! - valid stats files (the checked-in corpus `fuzz/corpus/marshal_reader/` and files made with
//!   [`Writer`]) mutated by byte flips, overwrites, insertions, deletions, truncations and
//!   splices: the same;
//! - deep nesting of every container: exactly the reader's depth limit decides between the value
//!   (or CPython's unhashable error) and "recursion limit exceeded";
//! - huge declared sizes (containers, strings, longs, negative and `i32::MIN`): an error, and the
//!   process's peak virtual memory does not grow by the declared size;
//! - what [`Writer`] writes (random value trees and stats-shaped dicts, with references) reads
//!   back as the values written, using every byte;
//! - every corpus file reads completely, and a truncated one gives `EOFError`.
//!
//! Case counts: a few hundred per property by default, so `cargo test` stays fast. For a long
//! run set `PROPTEST_CASES` (it overrides every property's count):
//!
//! ```text
//! PROPTEST_CASES=200000 PYO3_PYTHON=.venvs/py3.12/bin/python \
//!     cargo test --release marshal::fuzz_tests
//! ```
//!
//! A failing case is saved by proptest under `proptest-regressions/marshal/fuzz_tests.txt` and
//! replayed first on later runs (commit that file with the fix).

use std::path::Path;
use std::rc::Rc;
use std::sync::{mpsc, OnceLock};
use std::thread;
use std::time::Duration;

use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::{select, Index};
use proptest::test_runner::TestCaseError;

use super::compare::{check_consistent, is_eof, same};
use super::read::{read, Error, Place, Value};
use super::Writer;

/// `read.rs`'s `MAX_DEPTH` (private there): nesting at which "recursion limit exceeded" starts.
/// [`depth_limit_is_exact`] fails if the two drift apart.
const MAX_DEPTH: usize = 200;

/// A read that has not finished after this long is taken as a hang.
const DEADLINE: Duration = Duration::from_secs(10);

/// The stack each read runs on. A release build needs about 70 KiB at the depth limit (under 128
/// KiB with a dict key hashed through references to every level there:
/// `hashing_through_containers_being_read_stays_on_a_small_stack`), so 256 KiB checks the "safe
/// on small stacks" promise with a margin; a debug build needs about 1 MiB.
fn stack_size() -> usize {
    if cfg!(debug_assertions) {
        8 << 20
    } else {
        256 << 10
    }
}

/// The case count: `PROPTEST_CASES` if set, else `default`.
pub(crate) fn config(default: u32) -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default);
    ProptestConfig {
        cases,
        // A hang aborts instead of shrinking; this bounds shrinking of ordinary failures.
        max_shrink_time: 120_000,
        ..ProptestConfig::default()
    }
}

/// Runs `check(&input)` on a fresh thread with [`stack_size`], waiting at most [`DEADLINE`].
/// A panic in `check` is re-raised here (so proptest sees it and shrinks); a timeout prints the
/// input and aborts (a hung thread cannot be stopped, and shrinking would start more of them).
fn guarded<R: Send + 'static>(
    input: Vec<u8>,
    check: impl FnOnce(&[u8]) -> R + Send + 'static,
) -> R {
    let copy = input.clone();
    let (tx, rx) = mpsc::channel();
    let handle = thread::Builder::new()
        .name("marshal-fuzz".into())
        .stack_size(stack_size())
        .spawn(move || {
            let r = check(&input);
            let _ = tx.send(r);
        })
        .expect("spawn a reader thread");
    match rx.recv_timeout(DEADLINE) {
        Ok(r) => {
            let _ = handle.join();
            r
        }
        Err(mpsc::RecvTimeoutError::Disconnected) => match handle.join() {
            Err(panic) => std::panic::resume_unwind(panic),
            Ok(()) => unreachable!("the reader thread ended without a result"),
        },
        Err(mpsc::RecvTimeoutError::Timeout) => {
            use std::io::Write;
            // Straight to the process's stderr: the test harness's capture would be lost.
            let _ = writeln!(
                std::io::stderr(),
                "\nmarshal reader did not finish within {DEADLINE:?} on this input \
                 ({} bytes, hex):\n{}\n",
                copy.len(),
                hex(&copy)
            );
            std::process::abort();
        }
    }
}

fn hex(data: &[u8]) -> String {
    data.iter().map(|b| format!("{b:02x}")).collect()
}

fn consistent(data: Vec<u8>) -> Result<(), TestCaseError> {
    guarded(data, check_consistent).map_err(TestCaseError::fail)
}

// ---------------------------------------------------------------------------------------------
// The corpus

const CORPUS_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fuzz/corpus/marshal_reader");

/// The corpus files, sorted by name.
fn corpus() -> &'static [Vec<u8>] {
    static FILES: OnceLock<Vec<Vec<u8>>> = OnceLock::new();
    FILES.get_or_init(|| {
        let mut paths: Vec<_> = std::fs::read_dir(Path::new(CORPUS_DIR))
            .unwrap_or_else(|e| panic!("the fuzz corpus {CORPUS_DIR}: {e}"))
            .map(|e| e.unwrap().path())
            .filter(|p| p.is_file())
            .collect();
        paths.sort();
        assert!(!paths.is_empty(), "the fuzz corpus {CORPUS_DIR} is empty");
        paths.iter().map(|p| std::fs::read(p).unwrap()).collect()
    })
}

#[test]
fn every_corpus_file_reads_completely() {
    for (i, data) in corpus().iter().enumerate() {
        let data = data.clone();
        let r = guarded(data, |data| {
            let (_, used) = read(data).map_err(|e| format!("{e:?}"))?;
            if used != data.len() {
                return Err(format!("used {used} of {} bytes", data.len()));
            }
            // Truncations (a sample of them): EOFError, like marshal.load.
            let step = (data.len() / 97).max(1);
            for cut in (0..data.len())
                .step_by(step)
                .chain(data.len().saturating_sub(9)..data.len())
            {
                if !is_eof(&read(&data[..cut])) {
                    return Err(format!("truncated to {cut} bytes: not an EOFError"));
                }
            }
            check_consistent(data)
        });
        if let Err(e) = r {
            panic!("corpus file #{i} (sorted by name): {e}");
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Value trees written with `Writer`

/// A value to write; `Ref` refers to an object written and marked earlier (the `u32` picks
/// which, modulo the finished ones; with none, an int is written instead).
#[derive(Debug, Clone)]
enum Node {
    Int(i64),
    Float(f64),
    /// UTF-8 (lone surrogates allowed), and whether to mark it for reference.
    Str(Vec<u8>, bool),
    Tuple(Vec<Node>, bool),
    Dict(Vec<(Node, Node)>),
    Ref(u32),
}

/// Objects marked for reference so far, by index; `None` while a container is being written.
type Marks = Vec<Option<Rc<Value>>>;

fn hashable(v: &Value) -> bool {
    match v {
        Value::List(_) | Value::Dict(_) | Value::Set(_) => false,
        Value::Tuple(items) => items.iter().all(|i| hashable(i)),
        _ => true,
    }
}

/// Writes `n` and returns the value the reader must give for it. In a dict key (`key`), a dict
/// is written as a tuple of its keys and values and references pick only hashable objects, so
/// that keys stay hashable.
fn emit(w: &mut Writer, n: &Node, marks: &mut Marks, key: bool) -> Rc<Value> {
    let mark = |marks: &mut Marks, index: Option<u32>| {
        if let Some(i) = index {
            assert_eq!(i as usize, marks.len(), "the writer's reference index");
            marks.push(None);
        }
        index.map(|i| i as usize)
    };
    match n {
        Node::Int(v) => {
            w.int(*v);
            Rc::new(Value::Int(*v))
        }
        Node::Float(f) => {
            w.float(*f);
            Rc::new(Value::Float(*f))
        }
        Node::Str(s, flag) => {
            let slot = mark(marks, w.str(s, *flag));
            let v = Rc::new(Value::Str(s.clone()));
            if let Some(i) = slot {
                marks[i] = Some(v.clone());
            }
            v
        }
        Node::Tuple(items, flag) => {
            let slot = mark(marks, w.tuple(items.len(), *flag));
            let items = items.iter().map(|i| emit(w, i, marks, key)).collect();
            let v = Rc::new(Value::Tuple(items));
            if let Some(i) = slot {
                marks[i] = Some(v.clone());
            }
            v
        }
        Node::Dict(pairs) if key => {
            let flat: Vec<Node> = pairs
                .iter()
                .flat_map(|(k, v)| [k.clone(), v.clone()])
                .collect();
            emit(w, &Node::Tuple(flat, false), marks, true)
        }
        Node::Dict(pairs) => {
            w.dict();
            let mut out = Vec::new();
            for (k, v) in pairs {
                let k = emit(w, k, marks, true);
                let v = emit(w, v, marks, false);
                out.push((k, v));
            }
            w.end_dict();
            Rc::new(Value::Dict(out))
        }
        Node::Ref(pick) => {
            let finished: Vec<usize> = (0..marks.len())
                .filter(|&i| matches!(&marks[i], Some(v) if !key || hashable(v)))
                .collect();
            if finished.is_empty() {
                return emit(w, &Node::Int(*pick as i64), marks, key);
            }
            let i = finished[*pick as usize % finished.len()];
            w.reference(i as u32);
            marks[i].clone().unwrap()
        }
    }
}

fn any_int() -> impl Strategy<Value = i64> {
    prop_oneof![
        any::<i64>(),
        -300i64..300,
        select(vec![
            i32::MAX as i64,
            i32::MIN as i64,
            i32::MAX as i64 + 1,
            i32::MIN as i64 - 1,
            1 << 45,
            -(1 << 60),
            i64::MAX,
            i64::MIN,
            i64::MIN + 1,
        ]),
    ]
}

fn any_float() -> impl Strategy<Value = f64> {
    prop_oneof![
        any::<u64>().prop_map(f64::from_bits),
        -1e6f64..1e6,
        select(vec![
            0.0,
            -0.0,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            5e-324
        ]),
    ]
}

/// A str as UTF-8: short printable ASCII, any Unicode, ASCII of 256+ bytes (the long form), or
/// with a lone surrogate (as `surrogatepass` encodes it).
fn any_text() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        4 => "[ -~]{0,24}".prop_map(String::into_bytes),
        2 => ".{0,12}".prop_map(String::into_bytes),
        1 => "[a-z]{250,300}".prop_map(String::into_bytes),
        1 => (".{0,4}", 0xa0u8..=0xbf, 0x80u8..=0xbf, ".{0,4}").prop_map(|(a, b, c, d)| {
            let mut s = a.into_bytes();
            s.extend_from_slice(&[0xed, b, c]);
            s.extend_from_slice(d.as_bytes());
            s
        }),
    ]
}

fn node() -> impl Strategy<Value = Node> {
    let leaf = prop_oneof![
        any_int().prop_map(Node::Int),
        any_float().prop_map(Node::Float),
        (any_text(), any::<bool>()).prop_map(|(s, f)| Node::Str(s, f)),
        any::<u32>().prop_map(Node::Ref),
    ];
    let tree = leaf.clone().prop_recursive(5, 96, 8, |inner| {
        prop_oneof![
            (vec(inner.clone(), 0..8), any::<bool>()).prop_map(|(v, f)| Node::Tuple(v, f)),
            vec((inner.clone(), inner), 0..6).prop_map(Node::Dict),
        ]
    });
    prop_oneof![
        8 => tree,
        // Tuples of 256+ items: the '(' form with a 4-byte size.
        1 => (vec(leaf, 250..300), any::<bool>()).prop_map(|(v, f)| Node::Tuple(v, f)),
    ]
}

// ---------------------------------------------------------------------------------------------
// Stats files written with `Writer`: {(file, line, name): (cc, nc, tt, ct, {caller: (...)})},
// with key tuples and strings marked on first use and referenced after, as marshal.dump does.

#[derive(Debug, Clone)]
struct Stats {
    /// (file, line, name); a file is an index into `files`.
    funcs: Vec<(usize, i64, Vec<u8>)>,
    files: Vec<Vec<u8>>,
    entries: Vec<Entry>,
}

/// A caller of an entry: its function, and the four numbers (cc, nc; tt, ct).
type Caller = (usize, [i64; 2], [f64; 2]);
/// A stats entry: its function, cc, nc, tt, ct, and its callers.
type Entry = (usize, [i64; 2], [f64; 2], Vec<Caller>);

fn stats() -> impl Strategy<Value = Stats> {
    let file = prop_oneof![
        "/[a-z_/]{1,30}\\.py".prop_map(String::into_bytes),
        Just(b"~".to_vec()),
        any_text(),
    ];
    let name = prop_oneof![
        "[a-z_][a-z0-9_]{0,15}".prop_map(String::into_bytes),
        "<built-in method [a-z_.]{1,20}>".prop_map(String::into_bytes),
        any_text(),
    ];
    let counts = || (0i64..1000, any_int()).prop_map(|(a, b)| [a, b]);
    let times = || (any_float(), 0.0f64..10.0).prop_map(|(a, b)| [a, b]);
    (
        vec(file, 1..4),
        vec((any::<usize>(), 0i64..5000, name), 1..12),
        vec(
            (
                any::<usize>(),
                counts(),
                times(),
                vec((any::<usize>(), counts(), times()), 0..5),
            ),
            0..16,
        ),
    )
        .prop_map(|(files, funcs, entries)| {
            let nf = funcs.len();
            let funcs = funcs
                .into_iter()
                .map(|(f, l, n)| (f % files.len(), l, n))
                .collect();
            let entries = entries
                .into_iter()
                .map(|(f, c, t, callers)| {
                    let callers = callers
                        .into_iter()
                        .map(|(g, c, t)| (g % nf, c, t))
                        .collect();
                    (f % nf, c, t, callers)
                })
                .collect();
            Stats {
                funcs,
                files,
                entries,
            }
        })
}

/// The bytes of a stats file and the value they hold.
fn write_stats(s: &Stats) -> (Vec<u8>, Value) {
    use std::collections::HashMap;
    let mut w = Writer::new();
    let mut key_refs: HashMap<usize, (u32, Rc<Value>)> = HashMap::new();
    let mut str_refs: HashMap<Vec<u8>, (u32, Rc<Value>)> = HashMap::new();
    fn text(w: &mut Writer, s: &[u8], refs: &mut HashMap<Vec<u8>, (u32, Rc<Value>)>) -> Rc<Value> {
        if let Some((i, v)) = refs.get(s) {
            w.reference(*i);
            return v.clone();
        }
        let v = Rc::new(Value::Str(s.to_vec()));
        let i = w.str(s, true).unwrap();
        refs.insert(s.to_vec(), (i, v.clone()));
        v
    }
    let mut key = |w: &mut Writer, f: usize| -> Rc<Value> {
        if let Some((i, v)) = key_refs.get(&f) {
            w.reference(*i);
            return v.clone();
        }
        let (file, line, name) = &s.funcs[f];
        let i = w.tuple(3, true).unwrap();
        let file = text(w, &s.files[*file], &mut str_refs);
        w.int(*line);
        let name = text(w, name, &mut str_refs);
        let v = Rc::new(Value::Tuple(vec![file, Rc::new(Value::Int(*line)), name]));
        key_refs.insert(f, (i, v.clone()));
        v
    };
    let numbers = |w: &mut Writer, c: &[i64; 2], t: &[f64; 2]| -> Vec<Rc<Value>> {
        w.int(c[0]);
        w.int(c[1]);
        w.float(t[0]);
        w.float(t[1]);
        vec![
            Rc::new(Value::Int(c[0])),
            Rc::new(Value::Int(c[1])),
            Rc::new(Value::Float(t[0])),
            Rc::new(Value::Float(t[1])),
        ]
    };
    w.dict();
    let mut pairs = Vec::new();
    for (f, c, t, callers) in &s.entries {
        let k = key(&mut w, *f);
        w.tuple(5, false);
        let mut items = numbers(&mut w, c, t);
        w.dict();
        let mut cpairs = Vec::new();
        for (g, c, t) in callers {
            let ck = key(&mut w, *g);
            w.tuple(4, false);
            let cv = Rc::new(Value::Tuple(numbers(&mut w, c, t)));
            cpairs.push((ck, cv));
        }
        w.end_dict();
        items.push(Rc::new(Value::Dict(cpairs)));
        pairs.push((k, Rc::new(Value::Tuple(items))));
    }
    w.end_dict();
    (w.buf, Value::Dict(pairs))
}

proptest! {
    #![proptest_config(config(256))]

    /// What the writer writes reads back as the values written, using every byte.
    #[test]
    fn writer_output_round_trips(n in node()) {
        let mut w = Writer::new();
        emit(&mut w, &n, &mut Marks::new(), false);
        let data = w.buf;
        let mut shown = hex(&data);
        shown.truncate(400);
        let r = guarded(data, move |data| {
            let mut marks = Marks::new();
            let mut w = Writer::new();
            // The expected value is made here: values hold Rc, which stays on its thread.
            let expected = emit(&mut w, &n, &mut marks, false);
            assert_eq!(w.buf, data);
            match read(data) {
                Ok((v, used)) if used == data.len() && same(&v, &expected) => check_consistent(data),
                Ok((v, used)) => Err(format!("read {used} of {} bytes as {v:?}", data.len())),
                Err(e) => Err(format!("{e:?}")),
            }
        });
        prop_assert!(r.is_ok(), "{}: {}", r.unwrap_err(), shown);
    }

    /// Stats-shaped files from the writer read back as written.
    #[test]
    fn writer_stats_files_round_trip(s in stats()) {
        let r = guarded(write_stats(&s).0, move |data| {
            let (bytes, expected) = write_stats(&s);
            assert_eq!(bytes, data);
            match read(data) {
                Ok((v, used)) if used == data.len() && same(&v, &expected) => Ok(()),
                Ok((v, used)) => Err(format!("read {used} of {} bytes as {v:?}", data.len())),
                Err(e) => Err(format!("{e:?}")),
            }
        });
        prop_assert!(r.is_ok(), "{}", r.unwrap_err());
    }
}

// ---------------------------------------------------------------------------------------------
// Random bytes

/// Bytes marshal data is made of: type codes (plain and flagged), NULL, small sizes and
/// reference indices, and the extremes of a size field.
const ALPHABET: &[u8] = b"0NFTS.iIlgfyxsutaAzZ)([<>{rc\x80\xb0\xce\xe9\xfa\xa9\xdb\xfb\xe7\
\x00\x00\x00\x01\x01\x02\x03\x05\x7f\xff";

fn alphabet_bytes(max: usize) -> impl Strategy<Value = Vec<u8>> {
    vec(select(ALPHABET), 0..max)
}

proptest! {
    #![proptest_config(config(512))]

    #[test]
    fn random_bytes(data in vec(any::<u8>(), 0..512)) {
        consistent(data)?;
    }

    #[test]
    fn random_marshal_alphabet(data in alphabet_bytes(512)) {
        consistent(data)?;
    }
}

// ---------------------------------------------------------------------------------------------
// Mutated stats files

#[derive(Debug, Clone)]
enum Mutation {
    /// XOR one bit.
    Flip(Index, u8),
    /// Overwrite a byte with a marshal-ish one or any byte.
    Set(Index, u8),
    /// Overwrite 4 bytes (a size or reference index) with a little-endian int.
    SetI32(Index, i32),
    Insert(Index, Vec<u8>),
    /// Delete up to this many bytes.
    Delete(Index, usize),
    Truncate(Index),
    /// Copy a range of a corpus file (or of this input, with `None`) over or into this one.
    Splice {
        donor: Option<Index>,
        from: Index,
        len: usize,
        at: Index,
        overwrite: bool,
    },
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let byte = prop_oneof![select(ALPHABET), any::<u8>()];
    let int = prop_oneof![
        select(vec![
            0,
            1,
            -1,
            2,
            255,
            256,
            0x7fff,
            0x8000,
            1 << 24,
            (1 << 24) + 1,
            i32::MAX,
            i32::MIN,
            i32::MIN + 1,
        ]),
        any::<i32>(),
        0i32..64,
    ];
    prop_oneof![
        4 => (any::<Index>(), 0u8..8).prop_map(|(i, b)| Mutation::Flip(i, b)),
        4 => (any::<Index>(), byte.clone()).prop_map(|(i, b)| Mutation::Set(i, b)),
        2 => (any::<Index>(), int).prop_map(|(i, v)| Mutation::SetI32(i, v)),
        2 => (any::<Index>(), vec(byte, 1..8)).prop_map(|(i, b)| Mutation::Insert(i, b)),
        2 => (any::<Index>(), 1usize..16).prop_map(|(i, n)| Mutation::Delete(i, n)),
        1 => any::<Index>().prop_map(Mutation::Truncate),
        2 => (
            proptest::option::of(any::<Index>()),
            any::<Index>(),
            1usize..64,
            any::<Index>(),
            any::<bool>()
        )
            .prop_map(|(donor, from, len, at, overwrite)| Mutation::Splice {
                donor,
                from,
                len,
                at,
                overwrite
            }),
    ]
}

fn mutate(mut data: Vec<u8>, muts: &[Mutation]) -> Vec<u8> {
    for m in muts {
        let n = data.len();
        // A position in 0..n (or 0..=n for an insertion point).
        let pos = |i: &Index| if n == 0 { 0 } else { i.index(n) };
        let gap = |i: &Index| i.index(n + 1);
        match m {
            Mutation::Flip(i, bit) if n > 0 => data[pos(i)] ^= 1 << bit,
            Mutation::Set(i, b) if n > 0 => data[pos(i)] = *b,
            Mutation::SetI32(i, v) if n >= 4 => {
                let p = pos(i).min(n - 4);
                data[p..p + 4].copy_from_slice(&v.to_le_bytes());
            }
            Mutation::Insert(i, b) => {
                let p = gap(i);
                data.splice(p..p, b.iter().copied());
            }
            Mutation::Delete(i, k) if n > 0 => {
                let p = pos(i);
                data.drain(p..(p + k).min(n));
            }
            Mutation::Truncate(i) => data.truncate(gap(i)),
            Mutation::Splice {
                donor,
                from,
                len,
                at,
                overwrite,
            } => {
                let src: Vec<u8> = match donor {
                    Some(d) => corpus()[d.index(corpus().len())].clone(),
                    None => data.clone(),
                };
                if src.is_empty() {
                    continue;
                }
                let f = from.index(src.len());
                let piece = &src[f..(f + len).min(src.len())];
                let p = gap(at);
                let end = if *overwrite {
                    (p + piece.len()).min(n)
                } else {
                    p
                };
                data.splice(p..end, piece.iter().copied());
            }
            _ => {}
        }
    }
    data
}

/// A valid input to mutate: a corpus file or a stats file from the writer.
fn seed() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        any::<Index>().prop_map(|i| corpus()[i.index(corpus().len())].clone()),
        stats().prop_map(|s| write_stats(&s).0),
        node().prop_map(|n| {
            let mut w = Writer::new();
            emit(&mut w, &n, &mut Marks::new(), false);
            w.buf
        }),
    ]
}

proptest! {
    #![proptest_config(config(512))]

    #[test]
    fn mutated_stats_files(data in seed(), muts in vec(mutation(), 1..8)) {
        consistent(mutate(data, &muts))?;
    }

    /// A truncated valid file is an EOFError (the format is self-delimiting).
    #[test]
    fn truncated_stats_files(data in seed(), cut in any::<Index>()) {
        let cut = cut.index(data.len());
        let r = guarded(data, move |data| {
            match read(&data[..cut]) {
                Err(Error::Eof(_)) => Ok(()),
                other => Err(format!("{:?}", other.map(|(_, n)| n))),
            }
        });
        prop_assert!(r.is_ok(), "cut at {}: {}", cut, r.unwrap_err());
    }
}

// ---------------------------------------------------------------------------------------------
// Deep nesting

/// A container holding the next level: a one-item tuple (both forms, flagged or not), list, set
/// or frozenset, or a dict with the next level as its only key or value.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Wrap {
    SmallTuple,
    FlaggedSmallTuple,
    Tuple,
    List,
    Set,
    FrozenSet,
    DictKey,
    DictValue,
}

fn nested(wraps: &[Wrap], leaf: &[u8]) -> Vec<u8> {
    let mut data = Vec::new();
    for w in wraps {
        match w {
            Wrap::SmallTuple => data.extend_from_slice(&[b')', 1]),
            Wrap::FlaggedSmallTuple => data.extend_from_slice(&[b')' | 0x80, 1]),
            Wrap::Tuple => data.extend_from_slice(&[b'(', 1, 0, 0, 0]),
            Wrap::List => data.extend_from_slice(&[b'[', 1, 0, 0, 0]),
            Wrap::Set => data.extend_from_slice(&[b'<', 1, 0, 0, 0]),
            Wrap::FrozenSet => data.extend_from_slice(&[b'>', 1, 0, 0, 0]),
            Wrap::DictKey => data.push(b'{'),
            Wrap::DictValue => data.extend_from_slice(b"{N"),
        }
    }
    data.extend_from_slice(leaf);
    for w in wraps.iter().rev() {
        match w {
            Wrap::DictKey => data.extend_from_slice(b"N0"),
            Wrap::DictValue => data.push(b'0'),
            _ => {}
        }
    }
    data
}

/// How deep a leaf reads (an empty dict reads its NULL one level down) and whether it is
/// unhashable itself.
fn leaf_info(leaf: &[u8]) -> (usize, Option<&'static str>) {
    match leaf {
        b"{0" => (2, Some("dict")),
        b"[\x00\x00\x00\x00" => (1, Some("list")),
        _ => (1, None),
    }
}

/// What reading [`nested`] gives: the depth error beyond the limit, else the first unhashable
/// set item or dict key from the inside out, else the value.
fn nested_outcome(wraps: &[Wrap], leaf: &[u8]) -> Result<(), Error> {
    let (levels, mut unhashable) = leaf_info(leaf);
    if wraps.len() + levels > MAX_DEPTH {
        return Err(Error::Value("recursion limit exceeded"));
    }
    // The type of the level read so far (only an unhashable one is ever named).
    let mut level = match leaf {
        b"{0" => "dict",
        b"[\x00\x00\x00\x00" => "list",
        _ => "tuple",
    };
    // `unhashable`: the type name Python's hash would fail on for the level read so far.
    for w in wraps.iter().rev() {
        if let (Wrap::Set | Wrap::FrozenSet | Wrap::DictKey, Some(found)) = (w, unhashable) {
            let place = match w {
                Wrap::DictKey => Place::DictKey,
                _ => Place::SetElement,
            };
            return Err(Error::Unhashable {
                key: level,
                found,
                place,
            });
        }
        (level, unhashable) = match w {
            Wrap::SmallTuple | Wrap::FlaggedSmallTuple | Wrap::Tuple => ("tuple", unhashable),
            Wrap::List => ("list", Some("list")),
            Wrap::Set => ("set", Some("set")),
            Wrap::FrozenSet => ("frozenset", None),
            Wrap::DictKey | Wrap::DictValue => ("dict", Some("dict")),
        };
    }
    Ok(())
}

fn wrap() -> impl Strategy<Value = Wrap> {
    select(vec![
        Wrap::SmallTuple,
        Wrap::FlaggedSmallTuple,
        Wrap::Tuple,
        Wrap::List,
        Wrap::Set,
        Wrap::FrozenSet,
        Wrap::DictKey,
        Wrap::DictValue,
    ])
}

fn leaf_bytes() -> impl Strategy<Value = Vec<u8>> {
    select(vec![
        b"N".to_vec(),
        b"i\x07\x00\x00\x00".to_vec(),
        b"z\x02ab".to_vec(),
        b")\x00".to_vec(),
        b"{0".to_vec(),
        b"[\x00\x00\x00\x00".to_vec(),
    ])
}

#[test]
fn depth_limit_is_exact() {
    for (n, expected) in [
        (MAX_DEPTH - 1, Ok(())),
        (MAX_DEPTH, Err(Error::Value("recursion limit exceeded"))),
    ] {
        let r = guarded(nested(&vec![Wrap::List; n], b"N"), |d| {
            read(d).map(|(_, used)| used == d.len())
        });
        assert_eq!(r.map(|_| ()), expected, "{n} nested lists");
    }
}

proptest! {
    #![proptest_config(config(128))]

    #[test]
    fn deep_nesting(
        wraps in vec(wrap(), 0..MAX_DEPTH + 60),
        leaf in leaf_bytes(),
        deep_only in any::<bool>(),
    ) {
        // Half the cases straddle the limit (within 3 levels of it).
        let mut wraps = wraps;
        if deep_only {
            wraps.resize(MAX_DEPTH - 3 + wraps.len() % 7, Wrap::SmallTuple);
        }
        let data = nested(&wraps, &leaf);
        let expected = nested_outcome(&wraps, &leaf);
        let len = data.len();
        let got = guarded(data.clone(), move |d| {
            check_consistent(d)?;
            Ok::<_, String>(read(d).map(|(_, used)| used))
        });
        let got = got.map_err(TestCaseError::fail)?;
        prop_assert_eq!(got.clone().map(|_| ()), expected);
        if let Ok(used) = got {
            prop_assert_eq!(used, len);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Huge declared sizes

/// The process's peak virtual memory, in KiB (Linux only).
fn vm_peak_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmPeak:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn huge_size() -> impl Strategy<Value = i32> {
    prop_oneof![
        // 2**29 items of 8 bytes or more: 4 GiB, which the peak-memory check would see.
        4 => (1i32 << 29)..=i32::MAX,
        1 => select(vec![1 << 24, (1 << 24) + 1, i32::MIN, -1]),
        1 => i32::MIN..0,
    ]
}

/// A type code followed by a size field (flagged or not).
fn sized_header() -> impl Strategy<Value = Vec<u8>> {
    (select(b"([<>suatAl".to_vec()), any::<bool>(), huge_size()).prop_map(|(code, flag, n)| {
        // A long of fewer than 2**24 digits is in range: keep its size out of reach.
        let n = if code == b'l' && n < 0 && n > -(1 << 24) {
            i32::MIN
        } else {
            n
        };
        let mut h = vec![if flag { code | 0x80 } else { code }];
        h.extend_from_slice(&n.to_le_bytes());
        h
    })
}

#[test]
fn huge_declared_sizes_are_errors_not_allocations() {
    // Not a proptest! block: the peak is measured around all the cases.
    let before = vm_peak_kib();
    let mut runner = proptest::test_runner::TestRunner::new(config(256));
    let strategy = (
        vec(sized_header(), 1..6),
        alphabet_bytes(64),
        prop_oneof![Just(0usize), 0usize..4096],
    );
    runner
        .run(&strategy, |(headers, tail, padding)| {
            let mut data: Vec<u8> = headers.concat();
            data.extend_from_slice(&tail);
            data.resize(data.len() + padding, b'N');
            let r = guarded(data, |d| {
                check_consistent(d)?;
                Ok::<_, String>(read(d).map(|(_, used)| used))
            })
            .map_err(TestCaseError::fail)?;
            prop_assert!(r.is_err(), "read {:?} bytes", r);
            Ok(())
        })
        .unwrap();
    if let (Some(before), Some(after)) = (before, vm_peak_kib()) {
        // Allocating a declared size would add at least 4 GiB (2**29 items of 8 bytes).
        let grown = after.saturating_sub(before);
        assert!(
            grown < 2 << 20,
            "peak virtual memory grew by {grown} KiB while reading huge declared sizes"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// The two findings of the first fuzzing runs (fixed), kept as tests.

/// A list of tuples, each holding two references to the one before, `k` times over: `12 * k`
/// bytes that unfold into `2**k` leaves.
fn shared_tuple_chain(k: u32) -> Vec<u8> {
    let mut d = vec![b'['];
    d.extend_from_slice(&(k + 2).to_le_bytes());
    d.extend_from_slice(&[b')' | 0x80, 2, b'N', b'N']);
    for i in 0..k {
        d.extend_from_slice(&[b')' | 0x80, 2, b'r']);
        d.extend_from_slice(&i.to_le_bytes());
        d.push(b'r');
        d.extend_from_slice(&i.to_le_bytes());
    }
    d
}

#[test]
fn shared_tuples_as_keys_are_checked_in_linear_time() {
    // The chain, then its last tuple as a set item and as a dict key: about 350 bytes each,
    // 2**28 leaves. Seconds now (read directly, not `guarded`, so that it fails rather than
    // aborting); at k = 60 it would run for centuries.
    let k = 28;
    let mut as_item = shared_tuple_chain(k);
    as_item.extend_from_slice(b"<\x01\x00\x00\x00r");
    as_item.extend_from_slice(&k.to_le_bytes());
    let mut as_key = shared_tuple_chain(k);
    as_key.extend_from_slice(b"{r");
    as_key.extend_from_slice(&k.to_le_bytes());
    as_key.extend_from_slice(b"N0");
    for data in [as_item, as_key] {
        let start = std::time::Instant::now();
        let (_, used) = read(&data).unwrap();
        assert_eq!(used, data.len());
        let took = start.elapsed();
        assert!(
            took < Duration::from_millis(100),
            "{} bytes took {took:?}",
            data.len()
        );
    }
}

#[test]
fn nested_containers_do_not_reserve_the_rest_of_the_input_each() {
    // 199 tuples declaring 2**31 - 1 items, nested, then 1 MiB of None: each level reserves
    // 8 MiB (capped by what is left, not by what its items could need), 1.6 GB in all.
    let mut data: Vec<u8> = (0..MAX_DEPTH - 1)
        .flat_map(|_| [b'(', 0xff, 0xff, 0xff, 0x7f])
        .collect();
    data.resize(data.len() + (1 << 20), b'N');
    let before = vm_peak_kib().expect("VmPeak in /proc/self/status (Linux)");
    let r = read(&data);
    assert!(matches!(r, Err(Error::Eof(_))));
    drop(r);
    let grown = vm_peak_kib().unwrap().saturating_sub(before);
    assert!(
        grown < 256 << 10,
        "peak virtual memory grew by {grown} KiB reading {} bytes",
        data.len()
    );
}

#[test]
fn hashing_through_containers_being_read_stays_on_a_small_stack() {
    // Flagged 2-tuples nested to the depth limit, each one's first item a reference to the tuple
    // around it (still being read), and at the bottom a dict keyed by the innermost: hashing
    // that key follows the references up through every level, at the deepest point of reading.
    let levels = MAX_DEPTH - 3;
    let mut data = vec![b'[', 1, 0, 0, 0, b')' | 0x80, 2, b'N'];
    for i in 1..levels {
        data.extend([b')' | 0x80, 2, b'r']);
        data.extend(((i - 1) as u32).to_le_bytes());
    }
    data.push(b'{');
    data.push(b'r');
    data.extend(((levels - 1) as u32).to_le_bytes());
    data.extend(b"N0");
    let r = guarded(data, |d| read(d).map(|(_, used)| used));
    // marshal.load hashes the outermost tuple's unread slot (NULL): refused.
    assert_eq!(
        r,
        Err(Error::Value(crate::marshal::read::SELF_CONTAINING_KEY))
    );
}
