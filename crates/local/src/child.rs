//! Child processes that die with their parent. A process bridgectl starts (an anvil of
//! the sandbox, a command the webhook listener runs per delivery) must not outlive it, SIGKILL
//! included, when no destructor runs: on Linux the kernel sends the child `signal` when
//! the thread that spawned it exits (`PR_SET_PDEATHSIG`, set in a `pre_exec` hook).
//! Spawn from a thread that lives as long as the child should.

/// The signal a child gets when its parent dies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    /// SIGKILL: it stops at once (a node the tests started).
    Kill,
    /// SIGTERM: it may clean up (a wrapper that kills its process group).
    Term,
}

/// Makes `command`'s child receive `signal` when the thread spawning it exits. A spawn whose parent died between fork and the hook fails
/// (`ESRCH`): nobody would be left to signal it. Does nothing but on Linux.
#[cfg(target_os = "linux")]
pub fn die_with_parent(command: &mut std::process::Command, signal: Signal) {
    use std::os::unix::process::CommandExt;
    let parent = std::process::id();
    let signal = match signal {
        Signal::Kill => libc::SIGKILL,
        Signal::Term => libc::SIGTERM,
    };
    // SAFETY: the hook runs in the forked child before exec and only calls the
    // async-signal-safe functions prctl(2) and getppid(2); its errors are made from an
    // errno value, so it allocates nothing (a forked child of a threaded process must
    // not take the allocator's lock).
    #[allow(unsafe_code)]
    unsafe {
        command.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, signal, 0, 0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // The parent may have died between fork and prctl: then nobody would signal
            // this child, so it does not start.
            if libc::getppid() as u32 != parent {
                return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
            }
            Ok(())
        });
    }
}

/// Does nothing off Linux (there is no parent-death signal to set).
#[cfg(not(target_os = "linux"))]
pub fn die_with_parent(_command: &mut std::process::Command, _signal: Signal) {}
