//! TLS to a shared PostgreSQL (issue 21, "Security"): a cluster that refuses every
//! connection not over TLS, with a certificate our own CA signed for `localhost`. A server
//! with `sslmode=verify-full sslrootcert=CA` works against it; the same with another CA, or
//! reaching it by a name its certificate does not give, is refused with the reason;
//! `verify-ca` accepts the other name, `require` encrypts without a CA; in the clear the
//! cluster turns it away. Skipped outside `make test`, as every server test.

mod common;
use common::*;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

fn run(cmd: &mut Command) {
    let out = cmd.output().expect("the command runs");
    assert!(
        out.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn openssl(dir: &Path, args: &[&str]) {
    run(Command::new("openssl").args(args).current_dir(dir));
}

/// A CA named `name` in `dir`: `name.pem` and `name.key`.
fn ca(dir: &Path, name: &str) {
    self_signed(dir, name, &[]);
}

/// A PostgreSQL cluster that takes TCP connections on 127.0.0.1 over TLS only.
struct TlsCluster {
    dir: PathBuf,
    port: u16,
    as_owner: Vec<String>,
    pg_bin: String,
}

impl TlsCluster {
    fn start(pg_bin: &str) -> TlsCluster {
        let dir = temp_dir("db-tls");
        ca(&dir, "ca");
        ca(&dir, "other-ca");
        openssl(
            &dir,
            &[
                "req",
                "-newkey",
                "ec",
                "-pkeyopt",
                "ec_paramgen_curve:prime256v1",
                "-nodes",
                "-keyout",
                "server.key",
                "-out",
                "server.csr",
                "-subj",
                "/CN=localhost",
            ],
        );
        std::fs::write(dir.join("san.ext"), "subjectAltName=DNS:localhost\n").unwrap();
        openssl(
            &dir,
            &[
                "x509",
                "-req",
                "-in",
                "server.csr",
                "-CA",
                "ca.pem",
                "-CAkey",
                "ca.key",
                "-CAcreateserial",
                "-out",
                "server.crt",
                "-days",
                "2",
                "-extfile",
                "san.ext",
            ],
        );
        // SAFETY: geteuid has no preconditions.
        let root = unsafe { libc::geteuid() } == 0;
        let as_owner: Vec<String> = if root {
            run(Command::new("chown").args(["-R", "postgres:"]).arg(&dir));
            ["runuser", "-u", "postgres", "--"]
                .map(String::from)
                .to_vec()
        } else {
            Vec::new()
        };
        run(Command::new("chmod").arg("600").arg(dir.join("server.key")));
        let owner = |program: &str| {
            let mut c = Command::new(as_owner.first().map_or(program, |s| s.as_str()));
            c.args(as_owner.iter().skip(1))
                .args(if as_owner.is_empty() {
                    Vec::new()
                } else {
                    vec![program.to_string()]
                });
            c
        };
        let data = dir.join("data");
        run(owner(&format!("{pg_bin}/initdb"))
            .arg("-D")
            .arg(&data)
            .args(["-U", "postgres", "--auth=trust", "--no-sync"]));
        std::fs::write(
            data.join("pg_hba.conf"),
            "local all all trust\nhostssl all all 127.0.0.1/32 trust\nhostnossl all all 127.0.0.1/32 reject\n",
        )
        .unwrap();
        let port = free_port();
        let settings = format!(
            "-c listen_addresses=127.0.0.1 -p {port} -k {d} -c fsync=off -c ssl=on -c ssl_cert_file={d}/server.crt -c ssl_key_file={d}/server.key",
            d = dir.display()
        );
        run(owner(&format!("{pg_bin}/pg_ctl"))
            .arg("-D")
            .arg(&data)
            .arg("-l")
            .arg(dir.join("server.log"))
            .args(["-w", "-o", &settings, "start"]));
        TlsCluster {
            dir,
            port,
            as_owner,
            pg_bin: pg_bin.to_string(),
        }
    }

    fn url(&self, host: &str, tls: &str) -> String {
        format!(
            "host={host} port={} user=postgres dbname=postgres {tls}",
            self.port
        )
    }

    fn file(&self, name: &str) -> String {
        self.dir.join(name).display().to_string()
    }
}

impl Drop for TlsCluster {
    fn drop(&mut self) {
        let pg_ctl = format!("{}/pg_ctl", self.pg_bin);
        let mut args: Vec<String> = self.as_owner.clone();
        args.push(pg_ctl);
        let _ = Command::new(&args[0])
            .args(&args[1..])
            .arg("-D")
            .arg(self.dir.join("data"))
            .args(["-m", "immediate", "stop"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A hub on `url` that must fail to start: its whole output, which says why.
fn refused(url: &str) -> String {
    let mut child = common::headspace()
        .args([
            "serve",
            "--role",
            "hub",
            "--addr",
            "127.0.0.1:0",
            "--database-url",
            url,
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let exited = wait_for(Duration::from_secs(30), || child.try_wait().unwrap());
    if exited.is_none() {
        let _ = child.kill();
    }
    let out = child.wait_with_output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        exited.is_some_and(|s| !s.success()),
        "the server should have refused {url}:\n{text}"
    );
    text
}

#[test]
fn the_shared_database_is_reached_over_verified_tls_only() {
    if cluster_url().is_none() {
        return;
    }
    let pg_bin = std::env::var("PG_BIN").expect("make test sets PG_BIN");
    let pg = TlsCluster::start(&pg_bin);
    let ca = pg.file("ca.pem");

    // verify-full with our CA, by the name the certificate gives: a working hub.
    let good = pg.url(
        "localhost",
        &format!("sslmode=verify-full sslrootcert={ca}"),
    );
    let hub = Server::start(&good, &temp_dir("db-tls-hub"), &["--role", "hub"]);
    assert_eq!(hub.get("/api/machines").0, 200, "{}", hub.log());
    // The same as a URL.
    let as_uri = format!(
        "postgresql://postgres@localhost:{}/postgres?sslmode=verify-full&sslrootcert={}",
        pg.port,
        ca.replace('/', "%2F")
    );
    let hub2 = Server::start(&as_uri, &temp_dir("db-tls-hub2"), &["--role", "hub"]);
    assert_eq!(hub2.get("/api/machines").0, 200, "{}", hub2.log());
    drop(hub2);

    // Another CA: not trusted.
    let other = pg.file("other-ca.pem");
    let text = refused(&pg.url(
        "localhost",
        &format!("sslmode=verify-full sslrootcert={other}"),
    ));
    assert!(text.contains("certificate"), "{text}");
    // A name the certificate does not give: refused by verify-full, accepted by verify-ca.
    let text = refused(&pg.url(
        "127.0.0.1",
        &format!("sslmode=verify-full sslrootcert={ca}"),
    ));
    assert!(text.contains("certificate"), "{text}");
    let by_address = pg.url("127.0.0.1", &format!("sslmode=verify-ca sslrootcert={ca}"));
    let hub3 = Server::start(&by_address, &temp_dir("db-tls-hub3"), &["--role", "hub"]);
    assert_eq!(hub3.get("/api/machines").0, 200, "{}", hub3.log());
    drop(hub3);
    // verify-full without a CA file says what is missing.
    let text = refused(&pg.url(
        "localhost",
        "sslmode=verify-full sslrootcert=/nonexistent/ca.pem",
    ));
    assert!(text.contains("/nonexistent/ca.pem"), "{text}");
    // require: encrypted, no CA needed.
    let hub4 = Server::start(
        &pg.url("127.0.0.1", "sslmode=require"),
        &temp_dir("db-tls-hub4"),
        &["--role", "hub"],
    );
    assert_eq!(hub4.get("/api/machines").0, 200, "{}", hub4.log());
    drop(hub4);
    // In the clear the cluster turns it away: the working hubs above were on TLS.
    let text = refused(&pg.url("localhost", "sslmode=disable"));
    assert!(
        text.contains("no encryption") || text.contains("pg_hba"),
        "{text}"
    );
    drop(hub);
}
