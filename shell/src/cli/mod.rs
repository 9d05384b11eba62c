//! The command families of the `headspace` binary, one file each; `main.rs` only parses
//! and dispatches.

pub mod agents;
pub mod audit;
pub mod hooks;
pub mod launch;
pub mod machines;
pub mod orchestrate;
pub(crate) mod output;
pub mod replay;
pub mod search;

use std::path::PathBuf;

/// Where the running server is.
#[derive(clap::Args)]
pub(crate) struct ServerArg {
    /// The server's address.
    #[arg(
        long = "addr",
        env = "HEADSPACE_ADDR",
        default_value = headspace::config::DEFAULT_ADDR
    )]
    pub(crate) addr: String,
    #[command(flatten)]
    pub(crate) auth: TokenArgs,
}

/// The server's token: from a file or the environment when given, else from the server's own
/// token file (`$HEADSPACE_HOME/token`), which the server made on its first start.
#[derive(clap::Args)]
pub(crate) struct TokenArgs {
    /// A file holding the server's token (keep it 0600).
    #[arg(long, env = "HEADSPACE_TOKEN_FILE")]
    token_file: Option<PathBuf>,
    /// The token itself (`HEADSPACE_TOKEN`); as a flag every account sees it in `ps`.
    #[arg(long, env = "HEADSPACE_TOKEN", hide_env_values = true, hide = true)]
    token: Option<String>,
}

impl TokenArgs {
    /// The token, if any is to be had; an unreadable token file ends the command with its
    /// reason.
    pub(crate) fn get(&self) -> Option<String> {
        match headspace::config::client_token(self.token_file.as_deref(), self.token.as_deref()) {
            Ok(t) => t,
            Err(e) => {
                eprintln!("headspace: {e}");
                std::process::exit(2);
            }
        }
    }
}
