//! The server's price table: the shipped one, its entries replaced by those of `--prices`
//! (`HEADSPACE_PRICES`). The server hands the file to the orchestration runners it starts
//! (`App::prices_file`), so that their budget gate prices tokens as the cards do.

use headspace_core::usage::PriceTable;
use std::path::Path;

/// The table for `path` (the shipped one without it); a file that cannot be read or parsed
/// stops the server with what was wrong, rather than pricing with the wrong table.
pub fn load(path: Option<&Path>) -> Result<PriceTable, String> {
    let builtin = PriceTable::builtin();
    let Some(path) = path else { return Ok(builtin) };
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read the price file {}: {e}", path.display()))?;
    let table = PriceTable::parse(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(builtin.overridden_by(table))
}
