//! `_PyRuntime`'s place in the interpreter's ELF file, read with the `object` crate.
//!
//! `object` rather than `goblin` or a hand-written reader: it is the ELF reader the Rust
//! toolchain itself uses (std's backtraces, gimli, cargo's tools), it parses without copying
//! and checks every offset against the file's bounds (a truncated or odd file is an error,
//! never a panic), and with only its `elf` reader enabled it adds little to the build.

use std::io;
use std::path::Path;

use object::{Object, ObjectSegment, ObjectSymbol};

/// What the loader needs to place a symbol of the file in a process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Located {
    /// The symbol's value (its link-time virtual address).
    pub value: u64,
    /// The lowest virtual address of the file's `PT_LOAD` segments.
    pub lowest_load: u64,
}

/// Why a file's symbol could not be found.
#[derive(Debug)]
pub enum SymbolError {
    /// The file could not be read.
    Io(io::Error),
    /// The file is not an ELF object we can read.
    NotElf(String),
    /// The file has no such symbol.
    Missing,
}

/// Finds `name` in the ELF file at `path`: in its dynamic symbol table (exported symbols, which
/// survive `strip`), else in its full symbol table when it has one. Only the parts of the file
/// that are parsed are read (a 30 MB libpython's headers and dynamic symbols are a few
/// hundred KB), so that a sampler that starts with its program misses less of it.
pub fn locate(path: &Path, name: &str) -> Result<Located, SymbolError> {
    let file = std::fs::File::open(path).map_err(SymbolError::Io)?;
    locate_in(&object::ReadCache::new(file), name)
}

/// As `locate`, for the file's bytes (or a cache of reads of it).
pub fn locate_in<'data, R: object::ReadRef<'data>>(
    data: R,
    name: &str,
) -> Result<Located, SymbolError> {
    let file = object::File::parse(data).map_err(|e| SymbolError::NotElf(e.to_string()))?;
    if file.format() != object::BinaryFormat::Elf {
        return Err(SymbolError::NotElf(format!("{:?} file", file.format())));
    }
    let lowest_load = file
        .segments()
        .map(|s| s.address())
        .min()
        .ok_or_else(|| SymbolError::NotElf("no loadable segment".into()))?;
    let value = file
        .dynamic_symbols()
        .chain(file.symbols())
        .find(|s| s.is_definition() && s.name_bytes() == Ok(name.as_bytes()))
        .map(|s| s.address())
        .ok_or(SymbolError::Missing)?;
    Ok(Located { value, lowest_load })
}

/// The address of the symbol in a process where the file's lowest mapping starts at `base`.
///
/// The loader maps the first `PT_LOAD` at its page-aligned address plus the load bias (0 for
/// a non-PIE executable), so the bias is `base` minus that aligned address, and every
/// link-time address of the file moves by it. `None` when the numbers cannot belong together.
pub fn address_in_process(located: &Located, base: u64, page_size: u64) -> Option<u64> {
    let aligned = located.lowest_load & !(page_size.checked_sub(1)?);
    let bias = base.checked_sub(aligned)?;
    bias.checked_add(located.value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_address_moves_by_the_load_bias() {
        // A shared object (linked at 0) loaded at 0x7f00_0000_0000.
        let lib = Located {
            value: 0x5a_b0c0,
            lowest_load: 0,
        };
        assert_eq!(
            address_in_process(&lib, 0x7f00_0000_0000, 4096),
            Some(0x7f00_005a_b0c0)
        );
        // A non-PIE executable: loaded where it was linked, no bias.
        let exe = Located {
            value: 0x9a_0000,
            lowest_load: 0x40_0000,
        };
        assert_eq!(address_in_process(&exe, 0x40_0000, 4096), Some(0x9a_0000));
        // A first segment that does not start on a page boundary.
        let odd = Located {
            value: 0x2000,
            lowest_load: 0x1234,
        };
        assert_eq!(address_in_process(&odd, 0x10_1000, 4096), Some(0x10_2000));
        // A base below the link address is not this file.
        assert_eq!(address_in_process(&exe, 0x1000, 4096), None);
    }

    #[test]
    fn a_file_that_is_not_elf_is_an_error_not_a_panic() {
        assert!(matches!(
            locate_in(&b"not an object file"[..], "_PyRuntime"),
            Err(SymbolError::NotElf(_))
        ));
        assert!(matches!(
            locate_in(&b"\x7fELF\x02\x01\x01"[..], "_PyRuntime"),
            Err(SymbolError::NotElf(_))
        ));
    }

    #[test]
    fn the_test_binary_has_no_python_runtime_but_finds_its_own_symbols() {
        let Ok(exe) = std::env::current_exe() else {
            return;
        };
        let data = std::fs::read(&exe).expect("read the test binary");
        assert!(matches!(
            locate_in(&data[..], "no_such_symbol_here"),
            Err(SymbolError::Missing)
        ));
        // Read in parts from the file, the same.
        assert!(matches!(
            locate(&exe, "no_such_symbol_here"),
            Err(SymbolError::Missing)
        ));
        // libc's `main` caller is dynamically imported, never defined: not found either.
        assert!(matches!(
            locate_in(&data[..], "__libc_start_main"),
            Err(SymbolError::Missing)
        ));
    }
}
