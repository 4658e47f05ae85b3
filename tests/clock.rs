//! The CLI under a clock set ahead (an `LD_PRELOAD` shim on `clock_gettime`, built here
//! with the machine's C compiler): a day's limit of 10 ST is not reset by moving the
//! clock 25 h and then 50 h ahead between two redeems of 8 ST. The window ends at the
//! chain's newest block time (plus a tolerance), and the refusal names both clocks.

use crate::live::Live;

/// `clock_gettime(CLOCK_REALTIME)` moved ahead by `$SHIFT_SECS` seconds; every other
/// clock (tokio's timers are monotonic) as it is.
const SHIM: &str = r#"
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <time.h>
int clock_gettime(clockid_t id, struct timespec *ts) {
    static int (*real)(clockid_t, struct timespec *);
    if (!real) real = (int (*)(clockid_t, struct timespec *))dlsym(RTLD_NEXT, "clock_gettime");
    int r = real(id, ts);
    const char *shift = getenv("SHIFT_SECS");
    if (r == 0 && id == CLOCK_REALTIME && shift) ts->tv_sec += atol(shift);
    return r;
}
"#;

#[test]
fn a_clock_set_ahead_does_not_reset_a_spending_window() {
    let live = Live::shared("clock_ahead");
    let src = live.dir.write("shift.c", SHIM);
    let shim = live.dir.join("shift.so");
    let built = std::process::Command::new("cc")
        .args(["-shared", "-fPIC", "-o"])
        .arg(&shim)
        .arg(&src)
        .arg("-ldl")
        .status()
        .expect("cc");
    assert!(built.success(), "building the clock shim");
    live.add_to_profile(
        "\n[profiles.default.policy.limits]\nst = { per = \"24h\", max = \"10\" }\n",
    );
    let redeem = |hours_ahead: u64| {
        let mut c = live.cmd();
        c.env("LD_PRELOAD", &shim)
            .env("SHIFT_SECS", (hours_ahead * 3600).to_string())
            .args(["redeem", "--from", "dev", "--amount", "8", "--yes"]);
        c
    };
    live.ok_cmd({
        let mut c = redeem(25);
        c.args(["--json"]);
        c
    });
    let err = redeem(50).fails_with(3);
    assert!(
        err.contains("10 ST per 24h") && err.contains("s ahead of it"),
        "{err}"
    );
}
