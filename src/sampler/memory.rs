//! Reads of another process's memory with `process_vm_readv`: no ptrace stop, no pause of the
//! target, and a bad address fails with `EFAULT` instead of crashing (also for our own pid).

use std::io;

/// Fills `buf` from `addr` in process `pid`. Errors carry the errno: `ESRCH` (no such
/// process), `EPERM` (not allowed to read it: another user, or Yama's `ptrace_scope`), `EFAULT`
/// (the range is not mapped there, also when only its end is not).
pub fn read(pid: i32, addr: u64, buf: &mut [u8]) -> io::Result<()> {
    if buf.is_empty() {
        return Ok(());
    }
    let local = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    let remote = libc::iovec {
        // The remote address is only a number to the kernel, never dereferenced here.
        iov_base: usize::try_from(addr).map_err(|_| io::Error::from_raw_os_error(libc::EFAULT))?
            as *mut libc::c_void,
        iov_len: buf.len(),
    };
    // SAFETY: `local` describes `buf`, which is valid for writes of `buf.len()` bytes and
    // borrowed mutably for the whole call; the kernel checks `remote` against the target's
    // mappings and writes at most `local.iov_len` bytes. One iovec of each, counts of 1.
    let n = unsafe { libc::process_vm_readv(pid, &local, 1, &remote, 1, 0) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    // A short read means the range ran into an unmapped page part way.
    if usize::try_from(n).ok() != Some(buf.len()) {
        return Err(io::Error::from_raw_os_error(libc::EFAULT));
    }
    Ok(())
}

/// Reads a native-endian `u64` at `addr`.
pub fn read_u64(pid: i32, addr: u64) -> io::Result<u64> {
    let mut b = [0u8; 8];
    read(pid, addr, &mut b)?;
    Ok(u64::from_ne_bytes(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn own_pid() -> i32 {
        // SAFETY: getpid has no preconditions and cannot fail.
        unsafe { libc::getpid() }
    }

    #[test]
    fn reads_its_own_memory() {
        let value: u64 = 0x0123_4567_89ab_cdef;
        let addr = &value as *const u64 as u64;
        assert_eq!(read_u64(own_pid(), addr).ok(), Some(value));
        let text = *b"xdebugpy and more";
        let mut got = [0u8; 17];
        assert!(read(own_pid(), text.as_ptr() as u64, &mut got).is_ok());
        assert_eq!(got, text);
    }

    #[test]
    fn a_bad_address_is_efault_not_a_crash() {
        let err = read_u64(own_pid(), 8).map_err(|e| e.raw_os_error());
        assert_eq!(err, Err(Some(libc::EFAULT)));
        let err = read_u64(own_pid(), u64::MAX - 3).map_err(|e| e.raw_os_error());
        assert_eq!(err, Err(Some(libc::EFAULT)));
    }

    #[test]
    fn a_missing_process_is_esrch() {
        let value = 7u64;
        let err = read_u64(i32::MAX, &value as *const u64 as u64).map_err(|e| e.raw_os_error());
        assert_eq!(err, Err(Some(libc::ESRCH)));
    }
}
