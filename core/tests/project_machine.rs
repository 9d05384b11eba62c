//! Which machine holds a project: the machines of the agents working in it, the one a
//! request names, this server's own first, and clear errors when none or several do.

use headspace_core::cluster::project_machine::{folder_key, project_machine, ProjectMachineError};

const AGENTS: [(&str, &str); 4] = [
    ("edge-a", "/home/u/app"),
    ("edge-b", "/home/u/lib/"),
    ("edge-b", "/home/u/shared"),
    ("edge-c", "/home/u/shared"),
];

#[test]
fn a_hub_forwards_to_the_one_machine_whose_agents_work_there() {
    assert_eq!(
        project_machine("/home/u/app", AGENTS, "", None),
        Ok("edge-a".into())
    );
    assert_eq!(
        project_machine("/home/u/lib", AGENTS, "", None),
        Ok("edge-b".into()),
        "trailing slashes do not make another folder"
    );
    assert_eq!(
        project_machine("/home/u/app/", AGENTS, "", Some("edge-a")),
        Ok("edge-a".into())
    );
}

#[test]
fn a_folder_on_several_machines_needs_the_machine_named() {
    let err = project_machine("/home/u/shared", AGENTS, "", None).unwrap_err();
    assert_eq!(
        err,
        ProjectMachineError::Ambiguous {
            project: "/home/u/shared".into(),
            holders: vec!["edge-b".into(), "edge-c".into()],
        }
    );
    assert!(err.to_string().contains("edge-b, edge-c"), "{err}");
    assert_eq!(
        project_machine("/home/u/shared", AGENTS, "", Some("edge-c")),
        Ok("edge-c".into())
    );
    // On one of those machines, its own folder is its own.
    assert_eq!(
        project_machine("/home/u/shared", AGENTS, "edge-b", None),
        Ok("edge-b".into())
    );
}

#[test]
fn a_machine_named_wrongly_or_a_folder_no_one_works_in_is_refused_with_the_reason() {
    let err = project_machine("/home/u/app", AGENTS, "", Some("edge-b")).unwrap_err();
    assert!(
        err.to_string().contains("no agent of machine edge-b")
            && err.to_string().contains("edge-a"),
        "{err}"
    );
    let err = project_machine("/etc", AGENTS, "", None).unwrap_err();
    assert_eq!(
        err,
        ProjectMachineError::Unknown {
            project: "/etc".into()
        }
    );
    // A machine asked about a folder no agent works in answers for itself: its own checks
    // refuse it with today's words.
    assert_eq!(
        project_machine("/etc", AGENTS, "edge-a", None),
        Ok("edge-a".into())
    );
}

#[test]
fn rows_without_a_machine_are_the_servers_own() {
    // One `--role all` server: rows name no machine.
    let rows = [("", "/home/u/app")];
    assert_eq!(
        project_machine("/home/u/app", rows, "laptop", None),
        Ok("laptop".into())
    );
    // A hub cannot hold such a row.
    assert!(project_machine("/home/u/app", rows, "", None).is_err());
}

#[test]
fn folder_keys() {
    assert_eq!(folder_key("/a/b/"), "/a/b");
    assert_eq!(folder_key("/a/b//"), "/a/b");
    assert_eq!(folder_key("/"), "/");
    assert_eq!(folder_key("//"), "/");
    assert_eq!(folder_key("rel"), "rel");
}
