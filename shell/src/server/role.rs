//! What one `headspace serve` process does (docs/multi-machine.md): everything (`all`, one
//! machine, the default), the agents of its machine (`edge`), or the page for every machine
//! (`hub`).

use std::fmt;

/// The part a server plays.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Role {
    /// One process for one machine: hooks, transcripts, panes, the core, the page.
    All,
    /// The machine's agents: hook receiver (loopback), transcript watcher, pane watchdog,
    /// the core and the pane commands addressed to this machine; its events go to the
    /// shared database. No dashboard.
    Edge,
    /// The dashboard, the API and SSE for every machine, from the shared database alone.
    Hub,
}

impl Role {
    /// Whether this process runs a core for its machine's agents (hooks, transcripts, panes).
    pub fn has_agents(self) -> bool {
        matches!(self, Role::All | Role::Edge)
    }

    /// Whether this process indexes committed turns for full-text search. Hubs serve the
    /// searches, so they index; ten edges polling one queue made ten times the small
    /// transactions for the same turns. An edge's loopback search is still whole: turns not
    /// yet indexed are parsed as they are read (`pgstore/search_index.rs`).
    pub fn indexes_turns(self) -> bool {
        self != Role::Edge
    }

    /// Whether this process's events go into the shared `events` table (read by hubs).
    pub fn shares_events(self) -> bool {
        self == Role::Edge
    }

    /// Whether a route is served by this role. An edge answers hooks, health, metrics and
    /// the API (on loopback only: for the CLI and the orchestration runners of its machine,
    /// which talk to the server beside them), never the dashboard; a hub everything but
    /// hooks (they go to the edge on the agent's machine).
    pub fn serves_route(self, segments: &[&str]) -> bool {
        let hook = matches!(segments, ["hook", _] | ["hook", _, _] | ["hooks", "claude"]);
        let always = matches!(segments, ["healthz"] | ["metrics"]);
        let api = matches!(segments, ["api", ..]);
        match self {
            Role::All => true,
            Role::Edge => hook || always || api,
            Role::Hub => !hook,
        }
    }

    /// Why a route is not served here, for the 404.
    pub fn refusal(self) -> &'static str {
        match self {
            Role::Edge => "this server is an edge (--role edge): it serves no dashboard; the page for every machine is served by a hub",
            Role::Hub => "this server is a hub (--role hub): hooks go to the edge on the agent's machine",
            Role::All => "",
        }
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Role::All => "all",
            Role::Edge => "edge",
            Role::Hub => "hub",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::Role;

    #[test]
    fn an_edge_serves_no_page_and_a_hub_everything_but_hooks() {
        let hook: &[&str] = &["hook", "stop"];
        let page: &[&str] = &["api", "agents"];
        let send: &[&str] = &["api", "agents", "1", "send"];
        let health: &[&str] = &["healthz"];
        assert!(Role::All.serves_route(hook) && Role::All.serves_route(page));
        assert!(Role::Edge.serves_route(hook) && Role::Edge.serves_route(health));
        assert!(Role::Edge.serves_route(page) && Role::Edge.serves_route(send));
        assert!(!Role::Edge.serves_route(&[""]), "no dashboard on an edge");
        assert!(
            !Role::Edge.serves_route(&["app.js"]),
            "no dashboard on an edge"
        );
        assert!(Role::Hub.serves_route(page) && Role::Hub.serves_route(send));
        assert!(!Role::Hub.serves_route(hook) && !Role::Hub.serves_route(&["hooks", "claude"]));
        assert!(!Role::Hub.serves_route(&["hook", "codex", "Stop"]));
        assert!(Role::Edge.serves_route(&["hook", "codex", "Stop"]));
    }
}
