//! The PostgreSQL backend: one connection per store, driven by a runtime thread of its
//! own, so that the store's synchronous interface works the same inside a caller's
//! async runtime (a statement's future is waited for on the caller's thread, as a
//! SQLite statement is run there; no runtime is started inside another).
//!
//! Statements are translated once (see `dialect`) and prepared once per connection. A
//! write transaction takes the namespace's transaction-scoped advisory lock first: the
//! writers of every host go one at a time, as SQLite's writers of one file do, so a
//! check and the write it guards are one step. The lock is released by the commit or the
//! rollback, and by the server when the connection is lost.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::task::{Context, Poll, Wake};
use std::time::Duration;

use bytes::BytesMut;
use tokio_postgres::types::{IsNull, ToSql, Type, to_sql_checked};
use tokio_postgres::{Client, NoTls, Statement};

use crate::conn::{Backed, Backend, Conn, Schema};
use crate::error::Error;
use crate::value::{Row, ToValue, Value};

/// How long connecting may take before the store is unreachable.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a statement waits for a lock (another host's write transaction) before it
/// fails, as SQLite's busy timeout bounds the wait of one file's writers.
const LOCK_TIMEOUT: &str = "10s";

/// How long a host may sit inside a transaction without a statement before the server
/// ends its session (and rolls the transaction back). Every write transaction holds the
/// store's one write lock: a host paused inside one (SIGSTOP, a VM frozen, a debugger)
/// would otherwise stall every other host for as long as it stays paused. Shorter than
/// [`LOCK_TIMEOUT`], so the others wait it out; the paused host, woken, finds its
/// connection gone and acts on nothing of that transaction.
const IDLE_IN_TRANSACTION_TIMEOUT: &str = "5s";

pub(crate) struct PgConn {
    client: Client,
    statements: HashMap<String, Statement>,
    location: String,
    namespace: &'static str,
    roll_back: bool,
    lost: bool,
}

impl PgConn {
    /// Connects to `url` (shown as `location`), and makes `schema`'s tables in its
    /// namespace if they are not there.
    pub(crate) fn connect(url: &str, location: &str, schema: &Schema) -> Result<PgConn, Error> {
        let unreachable = |reason: String| Error::Unreachable {
            location: location.to_owned(),
            reason,
        };
        let mut config: tokio_postgres::Config = url
            .parse()
            .map_err(|e: tokio_postgres::Error| unreachable(format!("not a database URL: {e}")))?;
        config
            .connect_timeout(CONNECT_TIMEOUT)
            .application_name("bridgectl")
            .keepalives(true)
            .keepalives_idle(Duration::from_secs(30));
        let (sent, received) = std::sync::mpsc::channel();
        std::thread::Builder::new()
            .name("bridgectl-store-pg".into())
            .spawn(move || drive(&config, &sent))
            .map_err(|e| unreachable(format!("cannot start its connection thread: {e}")))?;
        let client = received
            .recv()
            .map_err(|_| unreachable("its connection thread ended".into()))?
            .map_err(unreachable)?;
        let mut conn = PgConn {
            client,
            statements: HashMap::new(),
            location: location.to_owned(),
            namespace: schema.namespace,
            roll_back: false,
            lost: false,
        };
        conn.prepare_namespace(schema)?;
        Ok(conn)
    }

    /// Whether the connection was lost (the store connects again for the next
    /// operation).
    pub(crate) fn is_lost(&self) -> bool {
        self.lost || self.client.is_closed()
    }

    fn prepare_namespace(&mut self, schema: &Schema) -> Result<(), Error> {
        let ns = schema.namespace;
        self.batch(&format!(
            "SET lock_timeout = '{LOCK_TIMEOUT}'; \
             SET idle_in_transaction_session_timeout = '{IDLE_IN_TRANSACTION_TIMEOUT}'; \
             SET search_path TO {ns}"
        ))?;
        // Made once, by whichever host takes the lock first; the others find it made.
        self.batch("BEGIN")?;
        let made = self.make_schema(schema);
        let end = if made.is_ok() { "COMMIT" } else { "ROLLBACK" };
        let ended = self.batch(end);
        made?;
        ended
    }

    fn make_schema(&mut self, schema: &Schema) -> Result<(), Error> {
        let ns = schema.namespace;
        self.lock(namespace_lock(ns) ^ 1)?;
        self.batch(&format!(
            "CREATE SCHEMA IF NOT EXISTS {ns};
             CREATE TABLE IF NOT EXISTS {ns}.store_version (version BIGINT NOT NULL)"
        ))?;
        let rows = self.query_raw(&format!("SELECT version FROM {ns}.store_version"), &[])?;
        let version: i64 = match rows.first() {
            Some(r) => r.get(0)?,
            None => 0,
        };
        if version > schema.version {
            return Err(Error::Schema(format!(
                "the store's tables in {ns} are at version {version}, made by a newer \
                 program; this one knows version {} and will not write to them",
                schema.version
            )));
        }
        if version < schema.version {
            self.batch(schema.postgres)?;
            self.batch(&format!(
                "DELETE FROM {ns}.store_version;
                 INSERT INTO {ns}.store_version (version) VALUES ({})",
                schema.version
            ))?;
        }
        Ok(())
    }

    fn batch(&mut self, sql: &str) -> Result<(), Error> {
        let done = block_on(self.client.batch_execute(sql));
        done.map_err(|e| self.failure(e))
    }

    fn statement(&mut self, sql: &str) -> Result<Statement, Error> {
        if let Some(s) = self.statements.get(sql) {
            return Ok(s.clone());
        }
        let translated = crate::dialect::to_postgres(sql);
        let prepared = block_on(self.client.prepare(&translated));
        let stmt = prepared.map_err(|e| self.failure(e))?;
        self.statements.insert(sql.to_owned(), stmt.clone());
        Ok(stmt)
    }

    /// Takes transaction-scoped advisory lock `key` (waits up to the lock timeout).
    fn lock(&mut self, key: i64) -> Result<(), Error> {
        let done = block_on(
            self.client
                .execute("SELECT pg_advisory_xact_lock($1)", &[&key]),
        );
        done.map(drop).map_err(|e| self.failure(e))
    }

    /// Runs `sql` as written (PostgreSQL's own dialect), unprepared.
    fn query_raw(&mut self, sql: &str, values: &[&Value]) -> Result<Vec<Row>, Error> {
        let params: Vec<Param<'_>> = values.iter().map(|v| Param(v)).collect();
        let refs: Vec<&(dyn ToSql + Sync)> = params.iter().map(|p| p as _).collect();
        let rows = block_on(self.client.query(sql, &refs));
        rows.map_err(|e| self.failure(e))?
            .iter()
            .map(row_of)
            .collect()
    }

    /// `e` as the store's error; a connection that is gone is marked lost.
    fn failure(&mut self, e: tokio_postgres::Error) -> Error {
        if e.is_closed() || self.client.is_closed() || is_io(&e) {
            self.lost = true;
            return Error::Unreachable {
                location: self.location.clone(),
                reason: format!("its connection was lost: {e}"),
            };
        }
        if let Some(db) = e.as_db_error() {
            use tokio_postgres::error::SqlState;
            let code = db.code();
            if *code == SqlState::UNIQUE_VIOLATION || *code == SqlState::FOREIGN_KEY_VIOLATION {
                return Error::Constraint(db.message().to_owned());
            }
            if *code == SqlState::LOCK_NOT_AVAILABLE {
                return Error::Unreachable {
                    location: self.location.clone(),
                    reason: format!(
                        "another host held its write lock for over {LOCK_TIMEOUT}: {}",
                        db.message()
                    ),
                };
            }
            if *code == SqlState::ADMIN_SHUTDOWN
                || *code == SqlState::CRASH_SHUTDOWN
                || *code == SqlState::CANNOT_CONNECT_NOW
                || *code == SqlState::IDLE_IN_TRANSACTION_SESSION_TIMEOUT
            {
                self.lost = true;
                return Error::Unreachable {
                    location: self.location.clone(),
                    reason: db.message().to_owned(),
                };
            }
        }
        Error::Postgres(e)
    }
}

fn is_io(e: &tokio_postgres::Error) -> bool {
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        if s.is::<std::io::Error>() {
            return true;
        }
        source = s.source();
    }
    false
}

/// The connection thread: connects with `config`, hands the client back on `sent`, then
/// drives the connection until it ends (the client dropped, or the server gone).
fn drive(config: &tokio_postgres::Config, sent: &std::sync::mpsc::Sender<Result<Client, String>>) {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            let _ = sent.send(Err(format!("cannot start its runtime: {e}")));
            return;
        }
    };
    runtime.block_on(async move {
        match config.connect(NoTls).await {
            Ok((client, connection)) => {
                if sent.send(Ok(client)).is_ok() {
                    let _ = connection.await;
                }
            }
            Err(e) => {
                let _ = sent.send(Err(e.to_string()));
            }
        }
    });
}

/// The advisory lock that serialises the write transactions of namespace `ns` (FNV-1a
/// of its name: the same number on every host).
fn namespace_lock(ns: &str) -> i64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in ns.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h as i64
}

/// Waits for `f` on this thread. The statement futures only talk to the connection
/// thread over channels, so they need no runtime of their own, and this works inside a
/// caller's runtime as outside one (it blocks the thread, as a SQLite statement does).
fn block_on<F: Future>(f: F) -> F::Output {
    struct Unpark(std::thread::Thread);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
        fn wake_by_ref(self: &Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Arc::new(Unpark(std::thread::current())).into();
    let mut cx = Context::from_waker(&waker);
    let mut f = std::pin::pin!(f);
    loop {
        if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
        std::thread::park();
    }
}

/// A parameter bound as the type PostgreSQL inferred for it: the statements are written
/// once for both backends, and SQLite's integers and text go where PostgreSQL wants a
/// `BIGINT`, an `INTEGER`, a `BOOLEAN` or `TEXT`.
#[derive(Debug)]
struct Param<'a>(&'a Value);

impl ToSql for Param<'_> {
    fn to_sql(
        &self,
        ty: &Type,
        out: &mut BytesMut,
    ) -> Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        match self.0 {
            Value::Null => Ok(IsNull::Yes),
            Value::Int(i) => match *ty {
                Type::INT8 => i.to_sql(ty, out),
                Type::INT4 => i32::try_from(*i)?.to_sql(ty, out),
                Type::INT2 => i16::try_from(*i)?.to_sql(ty, out),
                Type::BOOL => (*i != 0).to_sql(ty, out),
                Type::TEXT | Type::VARCHAR | Type::BPCHAR | Type::NAME | Type::UNKNOWN => {
                    i.to_string().as_str().to_sql(ty, out)
                }
                Type::JSON | Type::JSONB => text_as_json(&i.to_string(), ty, out),
                _ => Err(format!("an integer given for a parameter of type {ty}").into()),
            },
            Value::Text(t) => match *ty {
                Type::INT8 => t.parse::<i64>()?.to_sql(ty, out),
                Type::INT4 => t.parse::<i32>()?.to_sql(ty, out),
                Type::JSON | Type::JSONB => text_as_json(t, ty, out),
                _ => t.as_str().to_sql(ty, out),
            },
            Value::Blob(b) => b.as_slice().to_sql(ty, out),
        }
    }

    fn accepts(_: &Type) -> bool {
        true
    }

    to_sql_checked!();
}

fn text_as_json(
    text: &str,
    ty: &Type,
    out: &mut BytesMut,
) -> Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
    if *ty == Type::JSONB {
        // jsonb's binary form: a version byte, then the text.
        out.extend_from_slice(&[1]);
    }
    out.extend_from_slice(text.as_bytes());
    Ok(IsNull::No)
}

fn row_of(r: &tokio_postgres::Row) -> Result<Row, Error> {
    let read = |e: tokio_postgres::Error, index: usize| Error::Column {
        index,
        reason: e.to_string(),
    };
    let mut values = Vec::with_capacity(r.len());
    for (i, column) in r.columns().iter().enumerate() {
        let v = match *column.type_() {
            Type::INT8 => r.try_get::<_, Option<i64>>(i).map(|v| v.map(Value::Int)),
            Type::INT4 => r
                .try_get::<_, Option<i32>>(i)
                .map(|v| v.map(|n| Value::Int(n.into()))),
            Type::INT2 => r
                .try_get::<_, Option<i16>>(i)
                .map(|v| v.map(|n| Value::Int(n.into()))),
            Type::BOOL => r
                .try_get::<_, Option<bool>>(i)
                .map(|v| v.map(|b| Value::Int(b.into()))),
            Type::BYTEA => r
                .try_get::<_, Option<Vec<u8>>>(i)
                .map(|v| v.map(Value::Blob)),
            _ => r
                .try_get::<_, Option<String>>(i)
                .map(|v| v.map(Value::Text)),
        }
        .map_err(|e| read(e, i))?;
        values.push(v.unwrap_or(Value::Null));
    }
    Ok(Row::new(values))
}

impl Conn for PgConn {
    fn execute(&mut self, sql: &str, values: &[&dyn ToValue]) -> Result<usize, Error> {
        let stmt = self.statement(sql)?;
        let values: Vec<Value> = values.iter().map(|v| v.to_value()).collect();
        let params: Vec<Param<'_>> = values.iter().map(Param).collect();
        let refs: Vec<&(dyn ToSql + Sync)> = params.iter().map(|p| p as _).collect();
        let done = block_on(self.client.execute(&stmt, &refs));
        let n = done.map_err(|e| self.failure(e))?;
        Ok(usize::try_from(n).unwrap_or(usize::MAX))
    }

    fn query(&mut self, sql: &str, values: &[&dyn ToValue]) -> Result<Vec<Row>, Error> {
        let stmt = self.statement(sql)?;
        let values: Vec<Value> = values.iter().map(|v| v.to_value()).collect();
        let params: Vec<Param<'_>> = values.iter().map(Param).collect();
        let refs: Vec<&(dyn ToSql + Sync)> = params.iter().map(|p| p as _).collect();
        let rows = block_on(self.client.query(&stmt, &refs));
        rows.map_err(|e| self.failure(e))?
            .iter()
            .map(row_of)
            .collect()
    }

    fn backend(&self) -> Backend {
        Backend::Postgres
    }

    fn roll_back(&mut self) {
        self.roll_back = true;
    }
}

impl Backed for PgConn {
    fn as_conn(&mut self) -> &mut dyn Conn {
        self
    }

    fn begin(&mut self, _durable: bool) -> Result<(), Error> {
        // Every commit is durable (the server's synchronous_commit, on by default).
        self.roll_back = false;
        self.batch("BEGIN")?;
        let locked = self.lock(namespace_lock(self.namespace));
        if let Err(e) = locked {
            let _ = self.batch("ROLLBACK");
            return Err(e);
        }
        Ok(())
    }

    fn finish(&mut self, ok: bool, _durable: bool) -> Result<(), Error> {
        let commit = ok && !std::mem::take(&mut self.roll_back);
        if commit {
            let committed = self.batch("COMMIT");
            if committed.is_err() && !self.lost {
                let _ = self.batch("ROLLBACK");
            }
            committed
        } else {
            self.batch("ROLLBACK")
        }
    }
}
