//! Search over all history, the history view and prune, on the real binary and PostgreSQL:
//! a phrase from an old turn, a file path, an error string with punctuation and a prefix are
//! found; the exact phrase ranks first; `%` and `_` are literal; bad input gets a 400 that
//! says why; a foreign origin is refused; `headspace search` prints the hits; prune refuses
//! without a date, lists before it deletes, and never touches a live agent.

mod common;
use common::*;
use headspace_core::Timestamp;
use headspace_testkit::synth::SessionWriter;
use serde_json::{json, Value};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::time::Duration;

/// The turn that holds the phrase the ranking test looks for, word for word.
const EXACT_PHRASE: &str = "the parser now handles trailing commas";

fn write(claude: &Path, w: &SessionWriter, lines: &[headspace_testkit::synth::Line]) {
    let text: String = lines.iter().map(|l| format!("{}\n", l.json)).collect();
    append(&claude.join(w.path()), &text);
}

fn turn_count(server: &Server, agent: &str) -> usize {
    server
        .try_json(&format!("/api/agents/{agent}/turns"))
        .and_then(|v| v.as_array().map(Vec::len))
        .unwrap_or(0)
}

/// The query string value of `s` (every byte but unreserved ones escaped).
fn enc(s: &str) -> String {
    headspace::client::encode_segment(s)
}

fn search(server: &Server, q: &str, extra: &str) -> Vec<Value> {
    let v = server.json(&format!("/api/search?q={}{extra}", enc(q)));
    v.as_array().expect("an array").clone()
}

/// The text of a hit's highlighted ranges (code points).
fn highlighted(hit: &Value) -> Vec<String> {
    let chars: Vec<char> = hit["snippet"].as_str().unwrap().chars().collect();
    hit["highlights"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let (a, b) = (
                r[0].as_u64().unwrap() as usize,
                r[1].as_u64().unwrap() as usize,
            );
            chars[a..b].iter().collect()
        })
        .collect()
}

fn raw_get(addr: &str, path: &str, headers: &[&str]) -> u16 {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    // With the credential: the checks under test are the origin's.
    let mut head = format!(
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\n{}\r\nConnection: close\r\n",
        bearer()
    );
    for h in headers {
        head.push_str(h);
        head.push_str("\r\n");
    }
    head.push_str("\r\n");
    s.write_all(head.as_bytes()).unwrap();
    let mut answer = String::new();
    let _ = s.read_to_string(&mut answer);
    answer
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0)
}

fn cli(server: &Server, args: &[&str]) -> (i32, String) {
    let out = common::headspace()
        .args(args)
        .args(["--addr", &server.addr])
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

/// Two agents with old conversations, read in from their transcripts.
struct History {
    server: Server,
    claude: std::path::PathBuf,
    db: String,
    old: SessionWriter,
    live: SessionWriter,
}

fn history(name: &str) -> Option<History> {
    let db = fresh_db(name)?;
    let claude = temp_dir(name);
    let server = Server::start(&db, &claude, &[]);
    let mut old = SessionWriter::new(1, Timestamp::parse_rfc3339("2026-01-05T09:00:00Z").unwrap());
    let mut live = SessionWriter::new(2, Timestamp::parse_rfc3339("2026-03-01T09:00:00Z").unwrap());
    let old_lines = [
        old.prompt("why does the build fail in src/lib.rs?", None),
        old.agent_text("error[E0308]: mismatched types\n --> src/lib.rs:10:5\n   expected `u64`, found `String`"),
        old.agent_text("Then rustc says error: expected `;`, found `}` at line 12."),
        old.agent_text(&format!("Fixed: {EXACT_PHRASE}, and all tests pass.")),
        // The same words, more of them, scattered: full text alone could rank this first.
        old.agent_text("Commas: trailing commas handled? The parser, now fixed, handles commas, trailing or not; parser parser commas trailing now handles."),
    ];
    let live_lines = [
        live.prompt("deploy 50% of the fleet_canary now", None),
        live.agent_text("500 machines are ready; fleetXcanary stays as it is."),
        live.agent_text("Rolling out to the canary: 50 percent done."),
    ];
    write(&claude, &old, &old_lines);
    write(&claude, &live, &live_lines);
    for (w, n) in [(&old, 5), (&live, 3)] {
        wait_for(Duration::from_secs(15), || {
            (turn_count(&server, &w.session_id) == n).then_some(())
        })
        .unwrap_or_else(|| panic!("turns of {}:\n{}", w.session_id, server.log()));
    }
    // The turns reach the database after the agent's view has them (its writes are behind):
    // search reads the database, so wait for each session's last turn there (written in
    // order, after the others).
    for last in ["\"parser parser commas trailing\"", "\"50 percent done\""] {
        wait_for(Duration::from_secs(15), || {
            (!search(&server, last, "").is_empty()).then_some(())
        })
        .unwrap_or_else(|| panic!("{last} never searchable:\n{}", server.log()));
    }
    Some(History {
        server,
        claude,
        db,
        old,
        live,
    })
}

#[test]
fn search_finds_phrases_paths_error_strings_and_prefixes_exact_first() {
    let Some(h) = history("search_finds") else {
        return;
    };
    let s = &h.server;
    let old_agent = s.json(&format!("/api/agents/{}", h.old.session_id))["id"]
        .as_u64()
        .unwrap();

    // A phrase from an old turn (full text, stemmed: "mismatch type").
    let hits = search(s, "\"mismatched types\"", "");
    assert_eq!(hits.len(), 1, "{hits:?}");
    assert_eq!(hits[0]["agent_id"], json!(old_agent));
    assert_eq!(hits[0]["actor"], json!("agent"));
    assert!(hits[0]["timestamp"]
        .as_str()
        .unwrap()
        .starts_with("2026-01-05"));
    for key in ["turn_id", "machine", "project", "snippet", "highlights"] {
        assert!(hits[0].get(key).is_some(), "{key} in {}", hits[0]);
    }
    // A file path: in the prompt and the error, both found, exact hits both.
    let hits = search(s, "src/lib.rs", "");
    assert_eq!(hits.len(), 2, "{hits:?}");
    for hit in &hits {
        assert_eq!(hit["exact"], json!(true));
        assert_eq!(highlighted(hit), vec!["src/lib.rs"]);
    }
    // An error string with punctuation, and an error code inside brackets.
    let hits = search(s, "error: expected `;`", "");
    assert!(
        !hits.is_empty() && hits[0]["exact"] == json!(true),
        "{hits:?}"
    );
    assert_eq!(highlighted(&hits[0]), vec!["error: expected `;`"]);
    let hits = search(s, "E0308", "");
    assert_eq!(hits.len(), 1, "{hits:?}");
    // A prefix of a word: the substring side finds it.
    let hits = search(s, "mismat", "");
    assert_eq!(hits.len(), 1, "{hits:?}");
    assert_eq!(highlighted(&hits[0]), vec!["mismat"]);
    // Case does not matter.
    assert_eq!(search(s, "SRC/LIB.RS", "").len(), 2);

    // Ranking: the turn holding the exact phrase first, the scattered words after it.
    let hits = search(s, EXACT_PHRASE, "");
    assert!(hits.len() >= 2, "{hits:?}");
    assert_eq!(hits[0]["exact"], json!(true), "{hits:?}");
    assert!(hits[0]["snippet"].as_str().unwrap().contains(EXACT_PHRASE));
    assert_eq!(hits[1]["exact"], json!(false), "{hits:?}");
    assert!(hits[0]["score"].as_f64() > hits[1]["score"].as_f64());
    // Full-text highlights are ranges of the plain snippet, on the words' stems.
    let words = highlighted(&hits[1]);
    assert!(!words.is_empty());
    for w in &words {
        let w = w.to_lowercase();
        assert!(
            ["comma", "trail", "parser", "now", "handl"]
                .iter()
                .any(|stem| w.starts_with(stem)),
            "{words:?}"
        );
    }

    // Filters: project, agent, actor, dates.
    let live_project = s.json(&format!("/api/agents/{}", h.live.session_id))["project"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(search(s, "src/lib.rs", &format!("&project={}", enc(&live_project))).is_empty());
    assert_eq!(
        search(s, "src/lib.rs", &format!("&agent={}", h.old.session_id)).len(),
        2
    );
    assert_eq!(search(s, "src/lib.rs", "&actor=user").len(), 1);
    assert!(search(s, "src/lib.rs", "&since=2026-02-01").is_empty());
    assert_eq!(search(s, "src/lib.rs", "&until=2026-01-05").len(), 2);
    assert_eq!(search(s, "src/lib.rs", "&limit=1").len(), 1);
    let newest = search(s, "src/lib.rs", "")[0]["turn_id"].as_u64().unwrap();
    assert_eq!(
        search(s, "src/lib.rs", &format!("&before={newest}")).len(),
        1
    );

    // The conversation opens at a hit: `around` gives the turns either side of it.
    let all: Vec<u64> = s
        .json(&format!("/api/agents/{old_agent}/turns"))
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_u64().unwrap())
        .collect();
    let around = |path: &str| -> Vec<u64> {
        s.json(path)
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["id"].as_u64().unwrap())
            .collect()
    };
    let at = all[2];
    assert_eq!(
        around(&format!(
            "/api/agents/{old_agent}/turns?around={at}&limit=3"
        )),
        all[1..4].to_vec()
    );
    assert_eq!(
        around(&format!(
            "/api/agents/{old_agent}/turns?around={}&limit=4",
            all[0]
        )),
        all[0..2].to_vec(),
        "two before it asked, none there"
    );
    assert_eq!(
        around(&format!("/api/agents/{old_agent}/turns?around={at}")),
        all
    );
    let other = search(s, "fleet_canary", "")[0]["turn_id"]
        .as_u64()
        .unwrap();
    let (status, body) = s.get(&format!("/api/agents/{old_agent}/turns?around={other}"));
    assert_eq!(status, 404, "{body}");
    let (status, _) = s.get(&format!(
        "/api/agents/{old_agent}/turns?around={at}&after={at}"
    ));
    assert_eq!(status, 400);

    // The CLI prints one line a hit.
    let (code, out) = cli(s, &["search", "src/lib.rs"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(
        out.lines().filter(|l| l.contains("src/lib.rs")).count(),
        2,
        "{out}"
    );
    let (code, out) = cli(s, &["search", "no such words anywhere zzqx"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("no results"), "{out}");
}

#[test]
fn search_finds_a_command_or_path_only_in_a_tool_step_at_its_turn() {
    let Some(db) = fresh_db("search_steps") else {
        return;
    };
    let claude = temp_dir("search_steps");
    let s = Server::start(&db, &claude, &[]);
    let mut w = SessionWriter::new(3, Timestamp::parse_rfc3339("2026-02-01T09:00:00Z").unwrap());
    let mut lines = vec![
        w.prompt("run the tests of the frontend crate", None),
        w.agent_text("Running them now."),
    ];
    lines.extend(w.tool(
        "Bash",
        json!({"command": "cargo test -p quuxfront --release"}),
        "test result: ok",
    ));
    lines.extend(w.tool(
        "Edit",
        json!({"file_path": "/repo/src/zebra_stripes.rs", "old_string": "a", "new_string": "b"}),
        "ok",
    ));
    lines.push(w.agent_text("All green."));
    write(&claude, &w, &lines);
    // The turns, and the steps under them, as the conversation shows them.
    let turns = wait_for(Duration::from_secs(15), || {
        let v = s.try_json(&format!("/api/agents/{}/turns", w.session_id))?;
        let turns = v.as_array()?.clone();
        let steps: usize = turns
            .iter()
            .map(|t| t["steps"].as_array().map_or(0, Vec::len))
            .sum();
        (turns.len() == 3 && steps == 2).then_some(turns)
    })
    .unwrap_or_else(|| panic!("turns and steps:\n{}", s.log()));
    let under = |tool: &str| -> u64 {
        turns
            .iter()
            .find(|t| {
                t["steps"]
                    .as_array()
                    .is_some_and(|st| st.iter().any(|x| x["tool"] == json!(tool)))
            })
            .unwrap_or_else(|| panic!("no turn with a {tool} step: {turns:?}"))["id"]
            .as_u64()
            .unwrap()
    };
    for turn in &turns {
        assert!(!turn["text"].as_str().unwrap().contains("quuxfront"));
    }

    // A command only a step holds: found exactly, at the turn the step is shown under.
    let hits = search(&s, "cargo test -p quuxfront", "");
    assert_eq!(hits.len(), 1, "{hits:?}");
    assert_eq!(hits[0]["turn_id"], json!(under("Bash")));
    assert_eq!(hits[0]["exact"], json!(true));
    assert_eq!(hits[0]["step"]["tool"], json!("Bash"));
    assert_eq!(
        hits[0]["step"]["summary"],
        json!("cargo test -p quuxfront --release")
    );
    assert!(hits[0]["step"]["tool_use_id"]
        .as_str()
        .unwrap()
        .starts_with("toolu_"));
    assert_eq!(highlighted(&hits[0]), vec!["cargo test -p quuxfront"]);
    // A path, exactly and by its words; stemmed words of a command by full text.
    let hits = search(&s, "src/zebra_stripes.rs", "");
    assert_eq!(hits.len(), 1, "{hits:?}");
    assert_eq!(hits[0]["turn_id"], json!(under("Edit")));
    assert_eq!(hits[0]["step"]["tool"], json!("Edit"));
    let hits = search(&s, "releases quuxfront", "");
    assert_eq!(hits.len(), 1, "{hits:?}");
    assert_eq!(hits[0]["exact"], json!(false));
    assert_eq!(hits[0]["step"]["tool"], json!("Bash"));
    assert!(!highlighted(&hits[0]).is_empty(), "{hits:?}");
    // A turn's own text: no step named.
    let hits = search(&s, "All green", "");
    assert_eq!(hits.len(), 1, "{hits:?}");
    assert_eq!(hits[0]["step"], Value::Null);
    // Filters apply to the step's turn.
    assert!(search(&s, "quuxfront", "&actor=user").is_empty());
    assert_eq!(search(&s, "quuxfront", "&actor=agent").len(), 1);
    assert!(search(&s, "quuxfront", "&since=2026-03-01").is_empty());
    // The CLI prints it too.
    let (code, out) = cli(&s, &["search", "quuxfront"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("quuxfront"), "{out}");
}

#[test]
fn search_takes_wildcards_literally_and_refuses_bad_input() {
    let Some(h) = history("search_attacks") else {
        return;
    };
    let s = &h.server;
    // `%` and `_` are literal: "50%" is not "50 anything", "fleet_canary" not "fleetXcanary".
    // (Full text still finds the word 50 in "50 percent", ranked below the exact hit.)
    let hits = search(s, "50%", "");
    let exact: Vec<&Value> = hits.iter().filter(|h| h["exact"] == json!(true)).collect();
    assert_eq!(exact.len(), 1, "{hits:?}");
    assert!(exact[0]["snippet"].as_str().unwrap().contains("50% of"));
    assert_eq!(hits[0]["exact"], json!(true), "{hits:?}");
    assert!(
        hits.iter()
            .all(|h| !h["snippet"].as_str().unwrap().contains("500")),
        "{hits:?}"
    );
    let hits = search(s, "fleet_canary", "");
    assert_eq!(hits.len(), 1, "{hits:?}");
    assert!(!hits[0]["snippet"].as_str().unwrap().contains("fleetX"));
    for nothing in ["%%%", "___", "\\%_", "%", "_"] {
        assert!(search(s, nothing, "").is_empty(), "{nothing}");
    }
    // SQL-ish input is text: nothing found, nothing dropped.
    for q in [
        "'; DROP TABLE turns; --",
        "\") OR 1=1 --",
        "src' OR 'a'='a",
        "!(&|<->):*",
    ] {
        assert!(search(s, q, "").is_empty(), "{q}");
    }
    assert_eq!(psql(&h.db, "SELECT count(*) FROM turns"), "8");

    // Bad input: a 400 that says what was wrong.
    let huge = "a".repeat(501);
    for (query, says) in [
        ("/api/search", "q must"),
        ("/api/search?q=", "q must"),
        ("/api/search?q=%20%20", "q must"),
        (&*format!("/api/search?q={huge}"), "too long"),
        ("/api/search?q=x&limit=0", "limit"),
        ("/api/search?q=x&limit=101", "limit"),
        ("/api/search?q=x&limit=ten", "limit"),
        ("/api/search?q=x&since=yesterday", "since must"),
        ("/api/search?q=x&until=2026-13-45", "until must"),
        ("/api/search?q=x&actor=robot", "actor"),
        ("/api/search?q=x&before=abc", "before"),
        ("/api/history?day=monday", "day must"),
    ] {
        let (status, body) = s.get(query);
        assert_eq!(status, 400, "{query}: {body}");
        assert!(body.contains(says), "{query}: {body}");
    }
    let (status, _) = s.get("/api/search?q=x&agent=nobody");
    assert_eq!(status, 404);
    // Another site's page may not read history.
    for path in ["/api/search?q=src", "/api/history"] {
        assert_eq!(
            raw_get(&s.addr, path, &["Origin: http://evil.example"]),
            403
        );
        assert_eq!(raw_get(&s.addr, path, &["Sec-Fetch-Site: cross-site"]), 403);
        assert_eq!(raw_get(&s.addr, path, &[]), 200);
    }
    // Prune is a POST with JSON only.
    let (status, _) = s.get("/api/prune");
    assert_eq!(status, 405);
}

#[test]
fn history_lists_ended_agents_and_prune_deletes_only_them_when_asked() {
    let Some(h) = history("search_prune") else {
        return;
    };
    let s = &h.server;
    let mut end = h
        .old
        .hook("SessionEnd", None, None, json!({"reason": "logout"}));
    let mut body: Value = serde_json::from_slice(&end).unwrap();
    body["transcript_path"] = json!(h.claude.join(h.old.path()).display().to_string());
    end = serde_json::to_vec(&body).unwrap();
    let (status, _) = s.post("/hook/SessionEnd", &end);
    assert_eq!(status, 200);
    let old_id = s.json(&format!("/api/agents/{}", h.old.session_id))["id"].clone();
    let live_id = s.json(&format!("/api/agents/{}", h.live.session_id))["id"].clone();
    let groups = wait_for(Duration::from_secs(10), || {
        let v = s.try_json("/api/history")?;
        (v.as_array()?.len() == 1).then_some(v)
    })
    .unwrap_or_else(|| panic!("no history:\n{}", s.log()));
    let group = &groups[0];
    assert_eq!(group["agents"].as_array().unwrap().len(), 1, "{groups}");
    let agent = &group["agents"][0];
    assert_eq!(agent["id"], old_id);
    assert_eq!(agent["turn_count"], json!(5));
    assert_eq!(
        agent["first_command"],
        json!("why does the build fail in src/lib.rs?")
    );
    let day = group["day"].as_str().unwrap().to_string();
    let project = group["project"].as_str().unwrap().to_string();
    let same = s.json(&format!("/api/history?day={day}&project={}", enc(&project)));
    assert_eq!(same, groups);
    assert_eq!(s.json("/api/history?day=2020-01-01"), json!([]));
    // An ended agent's conversation stays readable.
    assert_eq!(turn_count(s, &h.old.session_id), 5);

    // Without a date prune refuses, through the API and the CLI.
    let (status, body) = s.post("/api/prune", b"{}");
    assert_eq!(status, 400, "{body}");
    let (code, out) = cli(s, &["prune"]);
    assert_ne!(code, 0, "{out}");
    let (code, out) = cli(s, &["prune", "--before", "soon"]);
    assert_ne!(code, 0, "{out}");
    assert!(out.contains("--before"), "{out}");

    // A dry run lists the ended agent, deletes nothing.
    let tomorrow = "2100-01-01";
    let (code, out) = cli(s, &["prune", "--before", tomorrow, "--dry-run"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains(&format!("agent {old_id}")), "{out}");
    assert!(out.contains("5 turn(s)"), "{out}");
    assert!(!out.contains(&format!("agent {live_id}")), "{out}");
    assert_eq!(psql(&h.db, "SELECT count(*) FROM turns"), "8");
    // A date before the agent was last seen prunes nothing.
    let (code, out) = cli(s, &["prune", "--before", "2026-01-01"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("nothing to prune"), "{out}");
    assert_eq!(psql(&h.db, "SELECT count(*) FROM turns"), "8");

    // The real thing: the ended agent goes, the live one (older turns or not) stays.
    let (code, out) = cli(s, &["prune", "--before", tomorrow]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("deleted"), "{out}");
    assert_eq!(psql(&h.db, "SELECT count(*) FROM turns"), "3");
    // Its row stays, marked, out of the agent list (so out of the audit) and the history.
    assert_eq!(
        psql(
            &h.db,
            &format!("SELECT count(*) FROM agents WHERE id = {old_id} AND pruned_at IS NOT NULL")
        ),
        "1"
    );
    let listed: Vec<Value> = s.json("/api/agents").as_array().unwrap().clone();
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0]["id"], live_id);
    assert_eq!(turn_count(s, &h.live.session_id), 3);
    assert!(search(s, "src/lib.rs", "").is_empty());
    assert_eq!(search(s, "fleet_canary", "").len(), 1);
    assert_eq!(s.json("/api/history"), json!([]));
    let (code, out) = cli(s, &["audit"]);
    assert_eq!(code, 0, "{out}");
    // Pruning again finds nothing more.
    let (code, out) = cli(s, &["prune", "--before", tomorrow]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("nothing to prune"), "{out}");
    // The pruned transcript is not read back in after a restart.
    let claude = h.claude.clone();
    let db = h.db.clone();
    drop(h.server);
    let again = Server::start(&db, &claude, &[]);
    wait_for(Duration::from_secs(10), || {
        again
            .try_json("/api/agents")
            .filter(|v| v.as_array().is_some_and(|a| a.len() == 1))
    })
    .unwrap_or_else(|| panic!("agents after restart:\n{}", again.log()));
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(
        psql(&db, "SELECT count(*) FROM turns"),
        "3",
        "{}",
        again.log()
    );
    let (code, out) = cli(&again, &["audit"]);
    assert_eq!(code, 0, "{out}");
}

#[test]
fn a_database_account_that_cannot_create_pg_trgm_is_told_what_to_run() {
    let Some(db) = fresh_db("search_no_trgm") else {
        return;
    };
    // An account that may create tables but not extensions (no CREATE on the database).
    let role = format!("hs_limited_{}", std::process::id());
    psql(&db, &format!("DROP ROLE IF EXISTS {role}"));
    psql(
        &db,
        &format!("CREATE ROLE {role} LOGIN; GRANT ALL ON SCHEMA public TO {role}"),
    );
    let url = db.replace("user=postgres", &format!("user={role}"));
    let out = common::headspace()
        .args(["migrate", "--database-url", &url])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(stderr.contains("0008_search.sql"), "{stderr}");
    assert!(stderr.contains("CREATE EXTENSION pg_trgm;"), "{stderr}");
    assert!(stderr.contains("as its owner or a superuser"), "{stderr}");
    // Once the owner has created it, the same account migrates.
    psql(&db, "CREATE EXTENSION pg_trgm");
    let out = common::headspace()
        .args(["migrate", "--database-url", &url])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
