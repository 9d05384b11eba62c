//! The events read side's rule (`headspace_core::cluster::event_feed`): a hub serves rows under their
//! positions, continuing its cursor, and never moves past a hole.

use headspace_core::cluster::event_feed::{serve_page, FeedRow, Served};
use headspace_core::Config;

fn rows(pairs: &[(i64, i64)]) -> Vec<FeedRow> {
    pairs.iter().map(|&(id, pos)| FeedRow { id, pos }).collect()
}

#[test]
fn rows_are_served_under_their_positions_whatever_their_ids() {
    let config = Config::new("/c");
    // Id 6 committed before id 5: the sequencer gave 6 position 3 and 5 position 4.
    let page = rows(&[(1, 1), (2, 2), (6, 3), (5, 4)]);
    assert_eq!(
        serve_page(&config, 0, &page),
        Served {
            ids: vec![1, 2, 3, 4],
            cursor: 4,
            hole: false
        }
    );
}

#[test]
fn a_page_after_the_cursor_continues_it() {
    let config = Config::new("/c");
    let page = rows(&[(40, 11), (38, 12)]);
    let served = serve_page(&config, 10, &page);
    assert_eq!(served.ids, vec![11, 12]);
    assert_eq!(served.cursor, 12);
}

#[test]
fn a_hole_stops_the_page_and_keeps_the_cursor_before_it() {
    let config = Config::new("/c");
    // Position 12 is not readable yet while 13 is: serve 11, stay at 11, read again.
    let page = rows(&[(20, 11), (22, 13), (23, 14)]);
    assert_eq!(
        serve_page(&config, 10, &page),
        Served {
            ids: vec![11],
            cursor: 11,
            hole: true
        }
    );
    // A page that starts past the cursor serves nothing.
    let served = serve_page(&config, 10, &rows(&[(30, 12)]));
    assert!(served.ids.is_empty() && served.hole && served.cursor == 10);
}

#[test]
fn an_empty_page_leaves_the_cursor() {
    let config = Config::new("/c");
    let served = serve_page(&config, 7, &[]);
    assert_eq!(
        (served.ids.len(), served.cursor, served.hole),
        (0, 7, false)
    );
}

/// The planted `events-read-by-id` serves ids and moves the cursor to them: the rule above
/// is what keeps an event committed late from being skipped.
#[cfg(feature = "planted-bugs")]
#[test]
fn the_planted_bug_follows_insert_ids() {
    let mut config = Config::new("/c");
    config.planted = Some(headspace_core::harness::planted::Bug::EventsReadById);
    let served = serve_page(&config, 0, &rows(&[(1, 1), (6, 2)]));
    assert_eq!(served.cursor, 6, "the cursor jumped over ids 2 to 5");
}
