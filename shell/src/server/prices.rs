//! The server's price table: the shipped one, its entries replaced by those of `--prices`
//! (`HEADSPACE_PRICES`). The file is remembered for the orchestration runners the server
//! starts, so that their budget gate prices tokens as the cards do.

use headspace_core::usage::PriceTable;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The `--prices` file this server was started with, handed to the runners it starts.
pub static PRICES_FILE: OnceLock<PathBuf> = OnceLock::new();

/// The table for `path` (the shipped one without it); a file that cannot be read or parsed
/// stops the server with what was wrong, rather than pricing with the wrong table.
pub fn load(path: Option<&Path>) -> Result<PriceTable, String> {
    let builtin = PriceTable::builtin();
    let Some(path) = path else { return Ok(builtin) };
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read the price file {}: {e}", path.display()))?;
    let table = PriceTable::parse(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    let _ = PRICES_FILE.set(path.to_path_buf());
    Ok(builtin.overridden_by(table))
}
