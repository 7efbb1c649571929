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

/// Reads `len` bytes at each of `addrs` into consecutive `len`-byte slots of `buf` with one
/// system call (at most `IOV_MAX` ranges a call). Returns how many leading ranges were read
/// whole: the kernel stops at the first range it cannot read.
pub fn read_many(pid: i32, addrs: &[u64], len: usize, buf: &mut Vec<u8>) -> io::Result<usize> {
    let addrs = &addrs[..addrs.len().min(IOV_MAX)];
    if len == 0 {
        buf.clear();
        return Ok(addrs.len());
    }
    let ranges: Vec<(u64, usize)> = addrs.iter().map(|&a| (a, len)).collect();
    Ok(read_ranges(pid, &ranges, buf)? / len)
}

/// Ranges one call reads at most.
const IOV_MAX: usize = 1024;

/// Reads the ranges `(address, length)` one after the other into `buf` (resized to their total
/// length) with one system call, so that they are read as close to one instant as the kernel
/// allows. Returns how many bytes were read: the kernel stops at the first range it cannot
/// read. At most `IOV_MAX` ranges.
pub fn read_ranges(pid: i32, ranges: &[(u64, usize)], buf: &mut Vec<u8>) -> io::Result<usize> {
    let ranges = &ranges[..ranges.len().min(IOV_MAX)];
    // Not zeroed first: what a short read leaves is never read (callers go by the count).
    buf.resize(ranges.iter().map(|r| r.1).sum(), 0);
    if buf.is_empty() {
        return Ok(0);
    }
    // A sample's reads are a few ranges each: their iovecs on the stack, not two allocations.
    const ON_STACK: usize = 32;
    let empty = libc::iovec {
        iov_base: std::ptr::null_mut(),
        iov_len: 0,
    };
    let (mut local_array, mut remote_array) = ([empty; ON_STACK], [empty; ON_STACK]);
    let (mut local_vec, mut remote_vec) = (Vec::new(), Vec::new());
    let (local, remote) = if ranges.len() <= ON_STACK {
        (
            &mut local_array[..ranges.len()],
            &mut remote_array[..ranges.len()],
        )
    } else {
        local_vec.resize(ranges.len(), empty);
        remote_vec.resize(ranges.len(), empty);
        (&mut local_vec[..], &mut remote_vec[..])
    };
    let mut offset = 0usize;
    let mut count = 0usize;
    for &(addr, len) in ranges {
        let Ok(addr) = usize::try_from(addr) else {
            break;
        };
        local[count] = libc::iovec {
            // SAFETY: `offset + len` is at most the sum of the lengths, `buf.len()`.
            iov_base: unsafe { buf.as_mut_ptr().add(offset) }.cast(),
            iov_len: len,
        };
        remote[count] = libc::iovec {
            iov_base: addr as *mut libc::c_void,
            iov_len: len,
        };
        offset += len;
        count += 1;
    }
    // SAFETY: the first `count` local iovecs describe distinct consecutive slots of `buf`,
    // which is borrowed mutably for the call and not resized during it; the kernel checks the
    // remote ranges against the target's mappings. `count` is at most IOV_MAX and both arrays
    // hold that many.
    let n = unsafe {
        libc::process_vm_readv(
            pid,
            local.as_ptr(),
            count as libc::c_ulong,
            remote.as_ptr(),
            count as libc::c_ulong,
            0,
        )
    };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(usize::try_from(n).unwrap_or(0))
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
    use crate::sampler::own_pid;

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
    fn many_ranges_in_one_call_stop_at_the_first_unreadable_one() {
        let a = [1u64, 2, 3];
        let b = [9u64];
        let addrs = [
            a.as_ptr() as u64 + 8,
            b.as_ptr() as u64,
            8,
            a.as_ptr() as u64,
        ];
        let mut buf = Vec::new();
        assert_eq!(read_many(own_pid(), &addrs, 8, &mut buf).ok(), Some(2));
        assert_eq!(buf.len(), 32);
        assert_eq!(buf[..8], 2u64.to_ne_bytes());
        assert_eq!(buf[8..16], 9u64.to_ne_bytes());
        assert_eq!(read_many(own_pid(), &[], 8, &mut buf).ok(), Some(0));
    }

    #[test]
    fn a_missing_process_is_esrch() {
        let value = 7u64;
        let err = read_u64(i32::MAX, &value as *const u64 as u64).map_err(|e| e.raw_os_error());
        assert_eq!(err, Err(Some(libc::ESRCH)));
    }
}
