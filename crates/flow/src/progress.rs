//! Progress of a long flow, reported to the caller, who renders it. Long waits report that they are still going: a redemption the relayer has not
//! finished, a receipt, a swap's ST credit. Every [`WAIT_REPORT`] of a wait, the caller's
//! [`Progress::waiting`] hears what is waited for, how long it has been and the deadline,
//! also while one slow answer is awaited (a platform that holds a poll for 20 s is a
//! wait like any other). The library only reports; the caller renders it.

use std::future::Future;
use std::time::Duration;

// Tokio's clock: the runtime's time, which a test can pause and advance.
use tokio::time::Instant;

/// Progress of a long flow, for the caller to show.
pub trait Progress: Send {
    /// One line of progress.
    fn step(&mut self, message: &str);

    /// A wait for `what` (`the relayer`, `the receipt of 0x..`) is still going,
    /// `elapsed` of at most `deadline`: called every [`WAIT_REPORT`] while it lasts, so
    /// a person can tell a slow platform from a hung one. Reports nothing by default.
    fn waiting(&mut self, what: &str, elapsed: Duration, deadline: Duration) {
        let _ = (what, elapsed, deadline);
    }
}

/// Progress that goes nowhere.
#[derive(Debug, Default)]
pub struct Quiet;

impl Progress for Quiet {
    fn step(&mut self, _message: &str) {}
}

/// How often a wait reports that it is still going.
pub const WAIT_REPORT: Duration = Duration::from_secs(5);

/// The clock of one wait.
pub(crate) struct WaitClock {
    what: String,
    start: Instant,
    deadline: Duration,
    next: Duration,
}

impl WaitClock {
    /// A wait for `what` (`"the relayer"`), started now, given up after `deadline`.
    pub(crate) fn new(what: impl Into<String>, deadline: Duration) -> WaitClock {
        WaitClock {
            what: what.into(),
            start: Instant::now(),
            deadline,
            next: WAIT_REPORT,
        }
    }

    /// The same wait, for `what` from now on (a wait of several stages: a transfer to be
    /// mined, then its credit), under the same deadline.
    pub(crate) fn waiting_for(&mut self, what: impl Into<String>) {
        self.what = what.into();
    }

    /// Time since the wait started.
    pub(crate) fn elapsed(&self) -> Duration {
        self.start.elapsed()
    }

    /// Reports through `progress` if a report is due.
    fn tick(&mut self, progress: &mut dyn Progress) {
        let elapsed = self.start.elapsed();
        if elapsed >= self.next {
            progress.waiting(&self.what, elapsed, self.deadline);
            while self.next <= elapsed {
                self.next += WAIT_REPORT;
            }
        }
    }

    /// Runs `fut` (a poll, or the sleep between polls), reporting while it lasts.
    pub(crate) async fn during<F: Future>(
        &mut self,
        fut: F,
        progress: &mut dyn Progress,
    ) -> F::Output {
        tokio::pin!(fut);
        loop {
            let due = self.next.saturating_sub(self.start.elapsed());
            tokio::select! {
                out = &mut fut => {
                    self.tick(progress);
                    return out;
                }
                () = tokio::time::sleep(due) => self.tick(progress),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Default)]
    struct Heard(Vec<(String, u64, u64)>);

    impl Progress for Heard {
        fn step(&mut self, _message: &str) {}
        fn waiting(&mut self, what: &str, elapsed: Duration, deadline: Duration) {
            self.0
                .push((what.to_owned(), elapsed.as_secs(), deadline.as_secs()));
        }
    }

    /// One slow answer (12 s) is reported on while it is awaited, every 5 s, with the
    /// deadline; a quick one reports nothing.
    #[tokio::test(start_paused = true)]
    async fn a_slow_answer_is_reported_on_while_awaited() {
        let mut heard = Heard::default();
        let mut clock = WaitClock::new("the relayer", Duration::from_secs(120));
        clock
            .during(tokio::time::sleep(Duration::from_millis(300)), &mut heard)
            .await;
        assert!(heard.0.is_empty(), "{:?}", heard.0);
        clock
            .during(tokio::time::sleep(Duration::from_secs(12)), &mut heard)
            .await;
        let want = [
            ("the relayer".to_owned(), 5, 120),
            ("the relayer".to_owned(), 10, 120),
        ];
        assert_eq!(heard.0, want);
    }
}
