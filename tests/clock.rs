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

/// The clock shim, built in `live`'s dir with the machine's C compiler.
fn shim(live: &Live) -> std::path::PathBuf {
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
    shim
}

#[test]
fn a_clock_set_ahead_does_not_reset_a_spending_window() {
    let live = Live::shared("clock_ahead");
    let shim = shim(&live);
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

/// Without a node for the chain, the platform's clock (its answers' `Date`) holds the
/// window's end: a clock set 25 h ahead does not make room for a second 8 ST under a
/// limit of 10 ST a day.
#[test]
fn without_a_node_the_platforms_clock_holds_a_spending_window() {
    let live = Live::shared("clock_ahead_no_node");
    let shim = shim(&live);
    let profile = live.dir.join("xdg/config/bridgectl/config.toml");
    let text = std::fs::read_to_string(&profile).expect("profile");
    let stripped: String = text
        .lines()
        .filter(|l| !l.contains("rpc_url"))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(&profile, stripped).expect("write");
    live.add_to_profile(
        "\n[profiles.default.policy]\nmax-gas-price = 100000000000\n\n\
         [profiles.default.policy.limits]\nst = { per = \"24h\", max = \"10\" }\n",
    );
    let redeem = |hours_ahead: u64| {
        let mut c = live.cmd();
        c.env("LD_PRELOAD", &shim)
            .env("SHIFT_SECS", (hours_ahead * 3600).to_string())
            .args(["redeem", "--from", "dev", "--amount", "8", "--yes"]);
        c
    };
    let first = live.ok_cmd({
        let mut c = redeem(0);
        c.args(["--json"]);
        c
    });
    assert_eq!(first["state"], "submitted", "{first:#}");
    let err = redeem(25).fails_with(3);
    assert!(
        err.contains("10 ST per 24h") && err.contains("s ahead of it"),
        "{err}"
    );
}
