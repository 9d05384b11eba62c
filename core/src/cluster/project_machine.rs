//! Which machine holds a project (issue 21, docs/multi-machine.md, "Commands to panes"): an
//! orchestration reads and writes the project's files and runs its runner beside them, so a
//! server asked about a project another machine holds forwards the command there. A project
//! is held by the machines of the agents working in it; the folder is compared as written
//! (another machine's paths cannot be resolved here), and the machine that takes the command
//! checks it again against its own disk.

use crate::cluster::machines::holder;
use std::collections::BTreeSet;

/// Why no one machine holds a project.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ProjectMachineError {
    /// No agent of any machine works in the folder.
    Unknown {
        /// The folder asked for.
        project: String,
    },
    /// The request names a machine none of whose agents works in the folder.
    NotThere {
        /// The folder asked for.
        project: String,
        /// The machine the request named.
        machine: String,
        /// The machines whose agents work there.
        holders: Vec<String>,
    },
    /// Agents of several machines work in a folder of that name, and the request named none
    /// (and none of them is this server's).
    Ambiguous {
        /// The folder asked for.
        project: String,
        /// The machines whose agents work there.
        holders: Vec<String>,
    },
}

impl std::fmt::Display for ProjectMachineError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ProjectMachineError::Unknown { project } => write!(
                f,
                "project {project} is no known agent's folder on any machine; start an agent there first"
            ),
            ProjectMachineError::NotThere {
                project,
                machine,
                holders,
            } => write!(
                f,
                "no agent of machine {machine} works in project {project}; its agents are on {}",
                holders.join(", ")
            ),
            ProjectMachineError::Ambiguous { project, holders } => write!(
                f,
                "project {project} is a folder on machines {}: name one with \"machine\"",
                holders.join(", ")
            ),
        }
    }
}

/// A folder as compared across machines: without trailing slashes (`/` stays itself).
pub fn folder_key(path: &str) -> &str {
    let trimmed = path.trim_end_matches('/');
    if trimmed.is_empty() && path.starts_with('/') {
        "/"
    } else {
        trimmed
    }
}

/// The machine that holds `project`, for the server named `own` (empty on a hub), given each
/// known agent's `(row machine, folder)` and the machine the request names, if any. A folder
/// of this server's own agents is its own (a single server keeps answering as it always did);
/// with no agent anywhere in it, a machine answers for itself (its own checks give the
/// error) and a hub says no machine holds it.
pub fn project_machine<'a>(
    project: &str,
    agents: impl IntoIterator<Item = (&'a str, &'a str)>,
    own: &str,
    asked: Option<&str>,
) -> Result<String, ProjectMachineError> {
    let key = folder_key(project);
    let holders: BTreeSet<&str> = agents
        .into_iter()
        .filter(|(_, cwd)| folder_key(cwd) == key)
        .map(|(machine, _)| holder(machine, own))
        .filter(|m| !m.is_empty())
        .collect();
    let list = || holders.iter().map(|m| m.to_string()).collect::<Vec<_>>();
    match asked.filter(|m| !m.is_empty()) {
        Some(m) if holders.contains(m) => Ok(m.to_string()),
        Some(m) if holders.is_empty() && m == own => Ok(own.to_string()),
        Some(_) if holders.is_empty() => Err(ProjectMachineError::Unknown {
            project: project.to_string(),
        }),
        Some(m) => Err(ProjectMachineError::NotThere {
            project: project.to_string(),
            machine: m.to_string(),
            holders: list(),
        }),
        None if holders.contains(own) || (holders.is_empty() && !own.is_empty()) => {
            Ok(own.to_string())
        }
        None if holders.len() == 1 => Ok(list().remove(0)),
        None if holders.is_empty() => Err(ProjectMachineError::Unknown {
            project: project.to_string(),
        }),
        None => Err(ProjectMachineError::Ambiguous {
            project: project.to_string(),
            holders: list(),
        }),
    }
}
