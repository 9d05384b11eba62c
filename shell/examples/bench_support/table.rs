//! The closing table of `make bench` (`measure | measured | goal | met`): each bench appends
//! its rows to the file named by `BENCH_TABLE` (scripts/bench.sh prints it at the end), or
//! prints them itself when run alone.

use std::io::Write;

/// Records one row: `met` is `None` for a figure with no goal.
pub fn row(measure: &str, measured: &str, goal: &str, met: Option<bool>) {
    let met = match met {
        Some(true) => "yes",
        Some(false) => "NO",
        None => "—",
    };
    let line = format!("{measure}\t{measured}\t{goal}\t{met}\n");
    match std::env::var_os("BENCH_TABLE") {
        Some(path) => {
            let mut f = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .expect("BENCH_TABLE file");
            f.write_all(line.as_bytes()).expect("BENCH_TABLE write");
        }
        None => print!("table: {}", line.replace('\t', " | ")),
    }
}
