//! The report's one table of functions, shared by every part of it (the rows, their callers,
//! the other profile of a comparison, threads, memory): a function of any of them is one id,
//! found by its key `(file, line, name)`; strings are interned once.

use std::collections::HashMap;

use rustc_hash::FxBuildHasher;

use crate::stats::model::Model;

#[derive(Default)]
pub struct Funcs {
    pub strings: Vec<Box<[u8]>>,
    string_ids: HashMap<Box<[u8]>, u32, FxBuildHasher>,
    /// Per function: file and name (string ids) and line.
    pub file: Vec<u32>,
    pub line: Vec<i64>,
    pub name: Vec<u32>,
    ids: HashMap<(u32, i64, u32), u32, FxBuildHasher>,
}

impl Funcs {
    pub fn string(&mut self, s: &[u8]) -> u32 {
        if let Some(&i) = self.string_ids.get(s) {
            return i;
        }
        let i = self.strings.len() as u32;
        self.strings.push(s.into());
        self.string_ids.insert(s.into(), i);
        i
    }

    /// The id of a function with interned strings, made when new.
    pub fn of_ids(&mut self, file: u32, line: i64, name: u32) -> u32 {
        let next = self.file.len() as u32;
        let id = *self.ids.entry((file, line, name)).or_insert(next);
        if id == next {
            self.file.push(file);
            self.line.push(line);
            self.name.push(name);
        }
        id
    }

    pub fn of(&mut self, file: &[u8], line: i64, name: &[u8]) -> u32 {
        let (file, name) = (self.string(file), self.string(name));
        self.of_ids(file, line, name)
    }

    /// The functions of `model` as ids here: a table indexed by the model's function id. New
    /// ones are made in the order of `first`, then of the model's ids. Strings are looked up
    /// once each.
    pub fn map_model(&mut self, model: &Model, first: impl IntoIterator<Item = u32>) -> Vec<u32> {
        let mut strings = vec![u32::MAX; model.strings.len()];
        let mut string = |me: &mut Funcs, id: u32| {
            let slot = &mut strings[id as usize];
            if *slot == u32::MAX {
                *slot = me.string(model.string(id));
            }
            *slot
        };
        let mut out = vec![u32::MAX; model.funcs.len()];
        let ids = first.into_iter().chain(0..model.funcs.len() as u32);
        for id in ids {
            let Some(slot) = out.get_mut(id as usize).filter(|s| **s == u32::MAX) else {
                continue;
            };
            let f = model.func(id);
            let (file, name) = (string(self, f.file), string(self, f.name));
            *slot = self.of_ids(file, f.line, name);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_id_per_key_whatever_model_it_came_from() {
        let mut a = Model::default();
        let fa = a.func_id(b"x.py", 1, b"f");
        let ga = a.func_id(b"x.py", 2, b"g");
        let mut b = Model::default();
        let gb = b.func_id(b"x.py", 2, b"g");
        let hb = b.func_id(b"y.py", 1, b"f");
        let mut funcs = Funcs::default();
        let ma = funcs.map_model(&a, [ga]);
        let mb = funcs.map_model(&b, []);
        assert_eq!(ma[ga as usize], 0);
        assert_eq!(ma[ga as usize], mb[gb as usize]);
        assert_ne!(ma[fa as usize], mb[hb as usize]);
        assert_eq!(funcs.file.len(), 3);
        assert_eq!(funcs.of(b"y.py", 1, b"f"), mb[hb as usize]);
        let y = funcs.file[mb[hb as usize] as usize];
        assert_eq!(&*funcs.strings[y as usize], b"y.py");
        // "x.py", "f", "g", "y.py".
        assert_eq!(funcs.strings.len(), 4);
    }
}
