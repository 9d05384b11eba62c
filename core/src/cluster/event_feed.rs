//! The read side of the shared events table (docs/multi-machine.md, "Events across
//! processes"): which rows of a page a hub serves to its SSE clients, under which ids, and
//! where its cursor goes next.
//!
//! Rows get an insert `id` when a writer's transaction inserts them and become visible when
//! it commits, so ids become visible out of order (two edges committing at once). The
//! sequencer gives visible rows their `pos`, 1, 2, 3, … in one order every reader shares. A
//! hub reads `pos > cursor` in position order and serves each row under its position; a page
//! that does not continue the cursor (a position missing below a later one) is a hole: the
//! hub serves what comes before it and reads again later, never moving past an event it has
//! not served. Ids are never a cursor: a reader that moved to id 6 while id 5 was still in
//! flight would never serve 5.

use crate::engine::Config;

/// One row of a page, as the fan-out read it (`pos > cursor ORDER BY pos`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FeedRow {
    /// Its insert id (taken when inserted, visible only at commit).
    pub id: i64,
    /// Its position, given by the sequencer.
    pub pos: i64,
}

/// What a reader does with a page.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Served {
    /// The SSE ids of the page's first rows, in order: `ids[i]` is `page[i]`'s. Rows past
    /// them are not served now.
    pub ids: Vec<i64>,
    /// The cursor after them: the next page is read after it.
    pub cursor: i64,
    /// True when the page stopped at a hole (the reader stops this round and reads again).
    pub hole: bool,
}

/// The rows of `page` (read after `cursor`, in position order) a hub serves, and its next
/// cursor: each row whose position continues the cursor, under that position, up to the
/// first hole.
pub fn serve_page(config: &Config, cursor: i64, page: &[FeedRow]) -> Served {
    if reads_by_id(config) {
        return by_insert_id(cursor, page);
    }
    let mut served = Served {
        ids: Vec::new(),
        cursor,
        hole: false,
    };
    for row in page {
        if row.pos != served.cursor + 1 {
            served.hole = true;
            break;
        }
        served.ids.push(row.pos);
        served.cursor = row.pos;
    }
    served
}

/// The planted `events-read-by-id`: every row is served under its insert id, and the cursor
/// follows the ids, so an id still in flight when a later one was served is never read.
fn by_insert_id(cursor: i64, page: &[FeedRow]) -> Served {
    let mut served = Served {
        ids: Vec::new(),
        cursor,
        hole: false,
    };
    for row in page {
        served.ids.push(row.id);
        served.cursor = served.cursor.max(row.id);
    }
    served
}

/// True when the planted `events-read-by-id` is.
fn reads_by_id(config: &Config) -> bool {
    config.is_planted(crate::harness::planted::Bug::EventsReadById)
}
