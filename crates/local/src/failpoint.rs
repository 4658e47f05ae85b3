//! Crash windows made reachable on purpose: in debug builds (the ones the tests run),
//! `BRIDGECTL_FAILPOINT=NAME` aborts the process at the point named `NAME`, as a power
//! cut or `kill -9` would stop it there, so a test can check what recovery finds. Release
//! builds compile the check out: the variable does nothing there. `NAME:N` aborts at the
//! N-th time the process reaches `NAME` (a resumed batch passes the window once for the
//! item it takes up again, then stops at the next one). `NAME:N:hang` stops there
//! without ending: the process waits in the window until a test kills it (`kill -9`
//! itself, not an abort standing in for it).
//!
//! | name | where |
//! |---|---|
//! | `signed-not-journaled` | the signature is in the signing log, its bytes are not in the journal yet |
//! | `journaled-not-sent` | the signed bytes are in the journal, nothing was sent |
//! | `key-temp-written` | a new or re-encrypted key file is complete and synced under its temp name |
//! | `key-linked-temp-left` | a new key file has its name, its temp name is not removed yet |
//! | `key-not-dir-synced` | a key file is in place, its directory entry is not synced yet |
//! | `batch-logged-not-journaled` | a group of a batch's signatures is in the signing log, its signed bytes are not in the journal yet |
//! | `batch-journaled` | a group of a batch's signed bytes is in the journal; the signed batch file is not written yet |
//!
//! They live here, beside the private writes of the local state, because every crate
//! that writes such state (keystore, signing log, flow) depends on this one.

/// Aborts the process when `BRIDGECTL_FAILPOINT` names `name` (debug builds only).
#[inline]
pub fn hit(name: &str) {
    #[cfg(debug_assertions)]
    {
        static HITS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let Ok(spec) = std::env::var("BRIDGECTL_FAILPOINT") else {
            return;
        };
        let mut parts = spec.split(':');
        let at = parts.next().unwrap_or_default();
        let nth = parts.next().map_or(1, |n| n.parse().unwrap_or(1));
        let hang = parts.next() == Some("hang");
        if at == name && HITS.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1 == nth {
            if hang {
                loop {
                    std::thread::sleep(std::time::Duration::from_secs(3600));
                }
            }
            std::process::abort();
        }
    }
    #[cfg(not(debug_assertions))]
    let _ = name;
}
