//! How the process is told to end, besides Ctrl-C (which the screens and
//! the headless transcript handle themselves).

/// Resolves when the process is told to end other than by Ctrl-C: its
/// terminal closed (SIGHUP) or it was asked to terminate (SIGTERM).
pub async fn end_requested() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        if let (Ok(mut hangup), Ok(mut terminate)) = (signal(SignalKind::hangup()), signal(SignalKind::terminate())) {
            tokio::select! {
                _ = hangup.recv() => {}
                _ = terminate.recv() => {}
            }
            return;
        }
    }
    std::future::pending::<()>().await
}
