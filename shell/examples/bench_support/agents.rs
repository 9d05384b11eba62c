//! Synthetic agents with live transcripts for the load benches: each a session writer whose
//! transcript lives under its server's claude directory, driven as Claude Code drives a
//! server: a prompt hook, the prompt and the answer appended to the transcript, a Stop hook.

use headspace_core::Timestamp;
use headspace_testkit::synth::SessionWriter;
use serde_json::json;
use std::collections::HashMap;
use std::io::Write;
use std::path::PathBuf;
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

/// One agent: its session, the server that takes its hooks and its tmux pane's name.
pub struct Agent {
    writer: SessionWriter,
    claude: PathBuf,
    addr: String,
    pane: String,
}

/// The agents of a load, shared by the threads that drive them.
pub type Agents = Arc<Vec<Mutex<Agent>>>;

/// When an exchange's prompt hook was sent and when its answer line was written.
#[derive(Clone, Copy)]
pub struct Sent {
    /// The prompt hook's POST began.
    pub prompt: Instant,
    /// The prompt and answer lines were appended (just before the write).
    pub answer: Instant,
}

/// The answer line an exchange with prompt `text` writes.
pub fn answer_of(text: &str) -> String {
    format!("Answer to {text}: done, the tests pass.")
}

/// The time now, as the core's timestamp.
pub fn now() -> Timestamp {
    Timestamp(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as i64,
    )
}

impl Agent {
    /// Agent number `n` (its session number too: keep them apart across a bench) of the
    /// server at `addr` watching `claude`, in pane `%{pane}`.
    pub fn new(n: u64, claude: PathBuf, addr: &str, pane: usize) -> Agent {
        Agent {
            writer: SessionWriter::new(n, now()),
            claude,
            addr: addr.to_string(),
            pane: format!("%{pane}"),
        }
    }

    /// A hook body as the installed hook script posts it.
    fn hook(&self, event: &str, extra: serde_json::Value) -> Vec<u8> {
        let mut v: serde_json::Value = serde_json::from_slice(&self.writer.hook(
            event,
            Some(&self.pane),
            Some(now()),
            extra,
        ))
        .unwrap();
        v["transcript_path"] = json!(self.claude.join(self.writer.path()).display().to_string());
        serde_json::to_vec(&v).unwrap()
    }

    fn post(&self, event: &str, body: &[u8]) {
        let path = format!("/hook/{event}");
        let answer = headspace::client::request(
            &self.addr,
            "POST",
            &path,
            body,
            Some(super::server::TOKEN),
            Duration::from_secs(30),
        );
        if !matches!(answer, Ok((200, _))) {
            eprintln!("bench: {path} to {}: {answer:?}", self.addr);
        }
    }

    /// One exchange: the prompt hook, the prompt and answer lines, the Stop hook.
    pub fn exchange(&mut self, text: &str) -> Sent {
        let prompt = Instant::now();
        self.post(
            "UserPromptSubmit",
            &self.hook("UserPromptSubmit", json!({ "prompt": text })),
        );
        let answer_text = answer_of(text);
        let lines = [
            self.writer.prompt(text, None),
            self.writer.agent_text(&answer_text),
        ];
        let mut block = String::new();
        for l in &lines {
            block.push_str(&l.json);
            block.push('\n');
        }
        let file = self.claude.join(self.writer.path());
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        let answer = Instant::now();
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&file)
            .and_then(|mut f| f.write_all(block.as_bytes()))
            .expect("transcript append");
        self.post(
            "Stop",
            &self.hook("Stop", json!({ "last_assistant_message": answer_text })),
        );
        Sent { prompt, answer }
    }
}

/// Runs `jobs` (due time from now, agent index, prompt text) from `senders` threads, each
/// job at its due time; returns when each was sent, by prompt text.
pub fn on_schedule(
    agents: &Agents,
    jobs: Vec<(Duration, usize, String)>,
    senders: usize,
) -> HashMap<String, Sent> {
    let (tx, rx) = mpsc::channel::<(usize, String)>();
    let rx = Arc::new(Mutex::new(rx));
    let sent: Arc<Mutex<HashMap<String, Sent>>> = Arc::default();
    let threads: Vec<_> = (0..senders)
        .map(|_| {
            let (rx, sent, agents) = (rx.clone(), sent.clone(), agents.clone());
            std::thread::spawn(move || loop {
                let job = rx.lock().unwrap().recv();
                let Ok((n, text)) = job else { break };
                let at = agents[n].lock().unwrap().exchange(&text);
                sent.lock().unwrap().insert(text, at);
            })
        })
        .collect();
    let start = Instant::now();
    for (due, n, text) in jobs {
        if let Some(d) = (start + due).checked_duration_since(Instant::now()) {
            std::thread::sleep(d);
        }
        tx.send((n, text)).unwrap();
    }
    drop(tx);
    for t in threads {
        t.join().unwrap();
    }
    Arc::try_unwrap(sent).ok().unwrap().into_inner().unwrap()
}

/// Every agent of `which` its exchange once per `period`, spread evenly over it, for
/// `rounds` periods; prompts `{tag} agent N round R`.
pub fn rounds(
    which: &[usize],
    period: Duration,
    rounds: u32,
    tag: &str,
) -> Vec<(Duration, usize, String)> {
    let step = period / which.len().max(1) as u32;
    let mut jobs = Vec::new();
    for r in 0..rounds {
        for (i, &n) in which.iter().enumerate() {
            jobs.push((
                period * r + step * i as u32,
                n,
                format!("{tag} agent {n} round {r}"),
            ));
        }
    }
    jobs
}

/// As many exchanges as `workers` threads can make in `time`, each thread cycling through
/// its share of the agents `which`; returns the prompts sent.
pub fn flat_out(
    agents: &Agents,
    which: &[usize],
    time: Duration,
    workers: usize,
    tag: &str,
) -> Vec<String> {
    let start = Instant::now();
    let threads: Vec<_> = (0..workers)
        .map(|w| {
            let agents = agents.clone();
            let mine: Vec<usize> = which.iter().copied().skip(w).step_by(workers).collect();
            let tag = tag.to_string();
            std::thread::spawn(move || {
                let mut sent = Vec::new();
                while start.elapsed() < time && !mine.is_empty() {
                    let n = mine[sent.len() % mine.len()];
                    let text = format!("{tag} agent {n} exchange {}", sent.len());
                    agents[n].lock().unwrap().exchange(&text);
                    sent.push(text);
                }
                sent
            })
        })
        .collect();
    threads
        .into_iter()
        .flat_map(|t| t.join().unwrap())
        .collect()
}
