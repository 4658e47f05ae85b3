//! The benchmark's baseline: an axum handler that reads the body and answers 200, nothing
//! else. `bench/webhook-listener.sh` runs the same load against it and against the real
//! listener. Usage: `webhook_bare ADDR PATH` (prints `{"addr": ...}` once listening).

#![allow(clippy::print_stdout)]

use axum::Router;
use axum::body::Bytes;
use axum::http::StatusCode;
use axum::routing::post;
use axum::serve::ListenerExt;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let addr = args.next().unwrap_or_else(|| "127.0.0.1:0".into());
    let path = args.next().unwrap_or_else(|| "/".into());
    let app = Router::new()
        .route(
            &path,
            post(|_body: Bytes| async { (StatusCode::OK, "stored\n") }),
        )
        .fallback(|| async { StatusCode::NOT_FOUND });
    let tcp = tokio::net::TcpListener::bind(&addr).await?;
    println!("{{\"addr\": \"{}\"}}", tcp.local_addr()?);
    let tcp = tcp.tap_io(|s| {
        let _ = s.set_nodelay(true);
    });
    axum::serve(tcp, app)
        .with_graceful_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await?;
    Ok(())
}
