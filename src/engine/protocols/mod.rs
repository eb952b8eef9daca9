//! Protocol runners. Each is async code over the shared [`Run`] machinery.

use crate::panel::Protocol;

use super::runtime::Run;

/// The runners: each protocol's variant and its module, which has
/// `run(&Run)`. A new protocol is one line here.
macro_rules! runners {
    ($($variant:ident => $module:ident),* $(,)?) => {
        $(pub mod $module;)*

        /// Run the panel's protocol to its end.
        pub(crate) async fn run(run: &Run) {
            match run.panel.protocol.kind {
                $(Protocol::$variant => $module::run(run).await),*
            }
        }
    };
}

runners! {
    MajEval => maj_eval,
    CollabEval => collab_eval,
    GEval => g_eval,
    SageEval => sage_eval,
    ChatEval => chat_eval,
    RoundTable => round_table,
    Pairwise => pairwise,
}
