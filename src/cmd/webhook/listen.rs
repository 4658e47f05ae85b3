//! `webhook listen`: the listener (it answers 200 only once a delivery is durable), a
//! line per delivery, and with `--ensure` the healer beside it, whose reports are printed
//! as they come.

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use bridgectl_webhook::ensure::Healer;
use bridgectl_webhook::handoff::{HandoffOptions, Sinks};
use bridgectl_webhook::keys::KeyFile;
use bridgectl_webhook::listener::{
    DEFAULT_MAX_BODY, DEFAULT_MAX_CONNECTIONS, Listener, ListenerConfig, Timeouts,
};
use bridgectl_webhook::store::Retention;
use clap::Args;
use serde_json::json;

use super::connect::connect_api;
use super::ensure::report_healing;
use crate::exit::{Code, coded};
use crate::global::GlobalOpts;
use crate::opts::Web3Api;
use crate::output;

// Arguments of `webhook listen`.
#[derive(Debug, Args)]
pub struct ListenArgs {
    /// Address to listen on, e.g. 127.0.0.1:8080 (port 0 picks one; see the first line).
    #[arg(long, value_name = "ADDR")]
    pub bind: SocketAddr,
    /// The one path deliveries are accepted on: /hooks/SECRET. Not "/". Without it, one is
    /// generated on first start, kept in the store and shown.
    #[arg(long, value_name = "PATH")]
    pub path: Option<String>,
    /// Event store: sqlite:FILE or FILE, or postgres://... (shared by replicas)
    /// [default: $XDG_STATE_HOME/bridgectl/webhook-events.sqlite].
    #[arg(
        long,
        env = "BRIDGECTL_WEBHOOK_STORE",
        hide_env_values = true,
        value_name = "STORE"
    )]
    pub store: Option<String>,
    /// Signing-key file [default: $XDG_STATE_HOME/bridgectl/webhook-keys.json].
    #[arg(
        long,
        env = "BRIDGECTL_WEBHOOK_KEYS",
        hide_env_values = true,
        value_name = "FILE"
    )]
    pub keys: Option<PathBuf>,
    /// Largest accepted body in bytes; larger ones get 413.
    #[arg(long, default_value_t = DEFAULT_MAX_BODY, value_name = "BYTES")]
    pub max_body: usize,
    /// Connections served at once; more wait in the backlog.
    #[arg(long, default_value_t = DEFAULT_MAX_CONNECTIONS, value_name = "N")]
    pub max_connections: usize,
    /// Seconds a request may take to send its headers (also closes idle keep-alives).
    #[arg(long, default_value_t = Timeouts::default().header.as_secs_f64(), value_name = "SECS")]
    pub header_timeout: f64,
    /// Seconds a request may take from its headers to the answer.
    #[arg(long, default_value_t = Timeouts::default().request.as_secs_f64(), value_name = "SECS")]
    pub request_timeout: f64,
    /// Run `sh -c CMD` per verified event, the body on stdin; retried until it exits 0.
    /// Its environment holds only PATH, HOME, USER, LOGNAME, LANG, LC_ALL, TZ, TMPDIR and
    /// BRIDGECTL_EVENT_ID, _SUBSCRIPTION_ID, _SEQUENCE_NUMBER, _EVENT_TYPE, _ATTEMPT and
    /// _RERUN: no secret of this process. An event can run more than once (a failed
    /// attempt, a listener killed mid-run): dedupe on (BRIDGECTL_SUBSCRIPTION_ID,
    /// BRIDGECTL_SEQUENCE_NUMBER). Each attempt is counted before it starts, so
    /// BRIDGECTL_RERUN=1 (BRIDGECTL_ATTEMPT above 1) marks every run after the first,
    /// whichever replica ran it; BRIDGECTL_RERUN=0 is the first and only unmarked run. A
    /// marked run may also be the first (its runner died before starting it): check it
    /// against your records, never drop it.
    #[arg(long, value_name = "CMD")]
    pub exec: Option<String>,
    /// Seconds one --exec run may take; then its process group is killed.
    #[arg(long, default_value_t = bridgectl_webhook::handoff::EXEC_TIMEOUT.as_secs_f64(), value_name = "SECS")]
    pub exec_timeout: f64,
    /// POST each verified event to URL; retried until it answers 2xx. Headers
    /// x-bridgectl-subscription-id and x-bridgectl-sequence-number identify the event
    /// (dedupe on them); x-bridgectl-attempt and x-bridgectl-rerun: 1 mark a re-run.
    /// A redirect is a failed attempt, never followed; no proxy is used for plain http;
    /// errors and the store name the URL by scheme, host and port only.
    #[arg(long, value_name = "URL")]
    pub forward: Option<String>,
    /// --exec commands run at once [default: two per core]. Events of one subscription
    /// (one webhook) still run one at a time, in the order they were stored, across
    /// replicas; different subscriptions run side by side.
    #[arg(long, value_name = "N")]
    pub exec_jobs: Option<usize>,
    /// --forward POSTs sent at once [default: four per core]; in order per subscription
    /// as for --exec-jobs.
    #[arg(long, value_name = "N")]
    pub forward_jobs: Option<usize>,
    /// Seconds a replica holds an event without renewing its lease before another may
    /// take it over; a live replica renews every second while it runs the event, so a
    /// dead one's events are taken over within this [default: 5].
    #[arg(long, value_name = "SECS")]
    pub lease: Option<f64>,
    /// Check the platform's webhook list every --ensure-interval and restore the ones
    /// pointing at --url that were removed or deactivated (needs the web3 API).
    #[arg(long, requires = "url")]
    pub ensure: bool,
    /// Seconds between two --ensure checks.
    #[arg(long, default_value_t = 60.0, value_name = "SECS")]
    pub ensure_interval: f64,
    /// The URL the platform delivers to (as given to `webhook create --url`); behind a
    /// load balancer it is not the bind address.
    #[arg(long, value_name = "URL")]
    pub url: Option<String>,
    /// Print nothing per delivery (by default one line each on stdout as it is stored:
    /// time, event type, subscription, sequence, verified or UNVERIFIED, duplicate;
    /// with --json one {"delivery": {...}} object a line). `webhook events` shows what
    /// was stored either way.
    #[arg(long, short = 'q')]
    pub quiet: bool,
    /// Seconds strangers' rows (unverified events, quarantine) are kept before they are
    /// deleted (default 7 days); checked at start and every minute. Verified events are
    /// never deleted.
    #[arg(long, default_value_t = Retention::default().max_age.as_secs_f64(), value_name = "SECS")]
    pub stranger_max_age: f64,
    /// Rows of strangers kept per table (unverified events; quarantine): past it the
    /// oldest are deleted. Each such row holds at most 256 bytes per string field, and
    /// only the first 1,000 (16 MiB) keep their body.
    #[arg(long, default_value_t = Retention::default().max_rows, value_name = "N")]
    pub stranger_max_rows: u64,
    /// The web3 API, for --ensure.
    #[command(flatten)]
    pub web3: Web3Api,
}

/// How long a stopping listener waits for stdout, once for the queued delivery lines and
/// once for the summary: a reader that stopped reading must not hold off SIGTERM.
const STOP_PRINTING: Duration = Duration::from_secs(1);

/// Runs `bridgectl webhook listen`.
pub(super) async fn run(global: &GlobalOpts, args: ListenArgs) -> anyhow::Result<()> {
    if global.json {
        crate::output::json_stream();
    }
    let store = crate::paths::webhook_store(&args.store)?;
    let keys = crate::paths::webhook_keys(&args.keys)?;
    let mut config = ListenerConfig::new(args.bind, store.clone(), &keys);
    config.path = args.path.clone();
    config.max_body = args.max_body;
    config.max_connections = args.max_connections;
    config.timeouts = Timeouts {
        header: secs("header-timeout", args.header_timeout)?,
        request: secs("request-timeout", args.request_timeout)?,
    };
    config.sinks = Sinks {
        exec: args.exec.clone(),
        forward: args.forward.clone(),
    };
    config.handoff = HandoffOptions::new(secs("exec-timeout", args.exec_timeout)?);
    config.retention = Retention {
        max_age: secs("stranger-max-age", args.stranger_max_age)?,
        max_rows: args.stranger_max_rows,
    };
    let printer = (!args.quiet).then(|| crate::deliveries::Printer::start(global.json));
    config.on_delivery = printer.as_ref().map(crate::deliveries::Printer::hook);
    if let Some(lease) = args.lease {
        config.handoff.lease = secs("lease", lease)?;
    }
    if let Some(jobs) = args.exec_jobs {
        config.handoff.exec_jobs = jobs;
    }
    if let Some(jobs) = args.forward_jobs {
        config.handoff.forward_jobs = jobs;
    }
    // The web3 client first: a missing token fails before the port is taken.
    let healer = if args.ensure {
        let url = args.url.clone().unwrap_or_default();
        Some((
            connect_api(global, &args.web3).await?,
            url,
            secs("ensure-interval", args.ensure_interval)?,
        ))
    } else {
        None
    };
    let stop = crate::shutdown::on_signal()?;
    let listener = Listener::bind(config).await?;
    let addr = listener.local_addr()?;
    let path = listener.path().to_owned();
    let url = format!("http://{addr}{path}");
    if global.json {
        // Every line of the stream is one object under one key: `listening`, then a
        // `delivery` each, then `stopped`.
        let line = serde_json::to_string(&json!({"listening": {
            "url": url,
            "addr": addr.to_string(),
            "path": path,
            "pathGenerated": listener.generated_path(),
            "store": store.display(),
        }}))?;
        output::line(line)?;
    } else {
        if listener.generated_path() {
            output::note(format!(
                "generated the path {path} (kept in the store; give it to `webhook create --url`)"
            ));
        }
        output::note(format!(
            "listening on {url} (store {}, keys {}); Ctrl-C stops",
            store.display(),
            keys.display()
        ));
    }
    let _ = std::io::stdout().flush();
    let json = global.json;
    let healing = healer.map(|(client, url, interval)| {
        Healer::start(
            client,
            KeyFile::new(&keys),
            listener.store(),
            url,
            interval,
            move |checked| match checked {
                Ok(report) => report_healing(json, &report),
                Err(e) => output::note(format!("ensure: {:#}", anyhow::Error::new(e))),
            },
        )
    });
    let stats = listener.run(stop).await;
    drop(healing);
    // Every delivery's line is out before the summary, unless stdout is stalled: then
    // the rest are dropped and counted, and the summary too is given up on after a bound,
    // so a stop never waits on the reader.
    let not_printed = printer.map_or(0, |p| p.finish(STOP_PRINTING));
    let stats = stats?;
    if global.json {
        let mut stopped = serde_json::to_value(stats)?;
        stopped["notPrinted"] = not_printed.into();
        let line = serde_json::to_string(&json!({ "stopped": stopped }))?;
        crate::deliveries::line_within(line, STOP_PRINTING);
        Ok(())
    } else {
        output::note(format!(
            "stopped: {} stored ({} unverified), {} duplicates, {} quarantined, {} failed{}",
            stats.stored,
            stats.unverified,
            stats.duplicates,
            stats.quarantined,
            stats.failed,
            if not_printed > 0 {
                format!(
                    "; {not_printed} deliveries were not printed (stdout was too slow), \
                     `webhook events` shows them"
                )
            } else {
                String::new()
            }
        ));
        Ok(())
    }
}

fn secs(flag: &'static str, value: f64) -> anyhow::Result<Duration> {
    Duration::try_from_secs_f64(value)
        .ok()
        .filter(|d| !d.is_zero())
        .ok_or_else(|| {
            coded(
                Code::Usage,
                format!("--{flag}: expected seconds above zero, found {value}"),
            )
        })
}
