//! Memory attribution (`Profile(memory=True)`): every allocation is charged to the function on
//! top of the profiled stack, and its free to the function that allocated the block.
//!
//! Python-free: functions are keys (as in the aggregator), blocks are addresses. The allocator
//! hooks that feed it are in `memory_hook`.

use std::collections::HashMap;

use rustc_hash::FxBuildHasher;

/// Totals of one function.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FuncMemory {
    pub allocations: u64,
    pub allocated: u64,
    pub freed: u64,
    /// Bytes allocated and not yet freed, of the blocks it allocated.
    pub net: i64,
    /// The highest `net` reached.
    pub peak: i64,
}

/// The live blocks and each function's totals.
#[derive(Debug, Default)]
pub struct Ledger {
    /// Live block address -> (index of its allocating function, size).
    blocks: HashMap<usize, (u32, u64), FxBuildHasher>,
    /// Function key -> index into `funcs`.
    index: HashMap<usize, u32, FxBuildHasher>,
    /// (key, totals), in order of first charge.
    pub funcs: Vec<(usize, FuncMemory)>,
    /// Frees of blocks allocated before tracking started (or by untracked code): not charged.
    pub unknown_frees: u64,
}

impl Ledger {
    fn func(&mut self, key: usize) -> u32 {
        if let Some(&i) = self.index.get(&key) {
            return i;
        }
        let i = self.funcs.len() as u32;
        self.funcs.push((key, FuncMemory::default()));
        self.index.insert(key, i);
        i
    }

    /// A block of `size` bytes at `ptr` was allocated while `key` was on top. Gives the
    /// allocating function's key and the size of a block this address still held (freed where
    /// tracking could not see it), now counted as freed.
    pub fn alloc(&mut self, key: usize, ptr: usize, size: u64) -> Option<(usize, u64)> {
        let f = self.func(key);
        let gone = self.blocks.insert(ptr, (f, size));
        if let Some((old_f, old_size)) = gone {
            // The address was handed out again without a free we saw (freed where tracking could
            // not look, e.g. without the GIL): that block is gone.
            self.charge_free(old_f, old_size);
        }
        let m = &mut self.funcs[f as usize].1;
        m.allocations += 1;
        m.allocated += size;
        m.net += size as i64;
        m.peak = m.peak.max(m.net);
        gone.map(|(old_f, old_size)| (self.funcs[old_f as usize].0, old_size))
    }

    /// The block at `ptr` was freed: its size, if it was a tracked block.
    pub fn free(&mut self, ptr: usize) -> Option<u64> {
        match self.blocks.remove(&ptr) {
            Some((f, size)) => {
                self.charge_free(f, size);
                Some(size)
            }
            None => {
                self.unknown_frees += 1;
                None
            }
        }
    }

    fn charge_free(&mut self, f: u32, size: u64) {
        let m = &mut self.funcs[f as usize].1;
        m.freed += size;
        m.net -= size as i64;
    }

    /// Blocks still live.
    pub fn live_blocks(&self) -> usize {
        self.blocks.len()
    }

    pub fn clear(&mut self) {
        *self = Ledger::default();
    }

    /// Forgets the live blocks but keeps the totals (tracking stopped: later frees are not seen).
    pub fn forget_blocks(&mut self) {
        self.blocks = HashMap::default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(l: &Ledger, key: usize) -> FuncMemory {
        l.funcs
            .iter()
            .find(|(k, _)| *k == key)
            .map(|x| x.1)
            .unwrap_or_default()
    }

    #[test]
    fn a_function_that_allocates_and_frees_nets_zero_with_its_peak() {
        let mut l = Ledger::default();
        l.alloc(1, 0x100, 64);
        l.alloc(1, 0x200, 32);
        l.free(0x100);
        l.free(0x200);
        let m = of(&l, 1);
        assert_eq!(
            (m.allocations, m.allocated, m.freed, m.net, m.peak),
            (2, 96, 96, 0, 96)
        );
    }

    #[test]
    fn frees_are_charged_to_the_allocating_function() {
        let mut l = Ledger::default();
        l.alloc(1, 0x100, 64);
        // Freed while function 2 is on top: still function 1's.
        l.free(0x100);
        assert_eq!(of(&l, 1).net, 0);
        assert_eq!(of(&l, 2), FuncMemory::default());
    }

    #[test]
    fn unknown_frees_are_counted_not_charged() {
        let mut l = Ledger::default();
        l.free(0x300);
        assert_eq!(l.unknown_frees, 1);
        assert!(l.funcs.is_empty());
    }

    #[test]
    fn an_address_reused_without_a_seen_free_closes_the_old_block() {
        let mut l = Ledger::default();
        l.alloc(1, 0x100, 10);
        l.alloc(2, 0x100, 20);
        assert_eq!(of(&l, 1).net, 0);
        assert_eq!(of(&l, 2).net, 20);
        assert_eq!(l.live_blocks(), 1);
    }
}
