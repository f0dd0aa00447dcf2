//! A real etcd for the tests (Debian's `etcd-server`, 3.4.23, which `.ci/run` installs):
//! one member on loopback ports of its own, its data in a temporary directory, that a
//! test can SIGKILL and start again on the same data and ports.

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct Etcd {
    data: tempfile::TempDir,
    client_port: u16,
    peer_port: u16,
    child: Option<Child>,
}

/// Whether `etcd` can run here; outside CI a machine without it skips with a reason.
pub fn available() -> bool {
    super::tool_available("etcd", "--version", "etcd-server")
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

impl Etcd {
    /// A started member, answering.
    pub fn start() -> Etcd {
        let mut etcd = Etcd {
            data: tempfile::tempdir().unwrap(),
            client_port: free_port(),
            peer_port: free_port(),
            child: None,
        };
        // A port found free can be taken by another test before etcd binds it: then
        // other ports, a few times.
        for _ in 0..5 {
            match etcd.launch() {
                Ok(()) => return etcd,
                Err(log) if log.contains("address already in use") => {
                    etcd.client_port = free_port();
                    etcd.peer_port = free_port();
                }
                Err(log) => panic!("etcd did not start: {log}"),
            }
        }
        panic!("etcd found no free ports in five tries");
    }

    /// `host:port` of its client endpoint.
    pub fn endpoint(&self) -> String {
        format!("127.0.0.1:{}", self.client_port)
    }

    fn data_dir(&self) -> PathBuf {
        self.data.path().join("member-data")
    }

    /// Starts it (again) on the same data and ports and waits until it serves.
    pub fn restart(&mut self) {
        if let Err(log) = self.launch() {
            panic!("etcd did not start: {log}");
        }
    }

    /// Starts it and waits until it serves; its log when it does not.
    fn launch(&mut self) -> Result<(), String> {
        let client = format!("http://127.0.0.1:{}", self.client_port);
        let peer = format!("http://127.0.0.1:{}", self.peer_port);
        let log = std::fs::File::create(self.data.path().join("etcd.log")).unwrap();
        let child = Command::new("etcd")
            .arg("--data-dir")
            .arg(self.data_dir())
            .args(["--name", "test"])
            .args(["--listen-client-urls", &client])
            .args(["--advertise-client-urls", &client])
            .args(["--listen-peer-urls", &peer])
            .args(["--initial-advertise-peer-urls", &peer])
            .args(["--initial-cluster", &format!("test={peer}")])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("start etcd");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(30);
        let log = || std::fs::read_to_string(self.data.path().join("etcd.log")).unwrap_or_default();
        while Instant::now() < deadline {
            if health(self.client_port) {
                return Ok(());
            }
            let exited = self
                .child
                .as_mut()
                .is_some_and(|c| c.try_wait().ok().flatten().is_some());
            if exited {
                self.child = None;
                return Err(log());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Err(log())
    }

    /// SIGKILL: no shutdown, as in a crash.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for Etcd {
    fn drop(&mut self) {
        self.kill();
    }
}

/// `GET /health` answers `{"health":"true"}`.
fn health(port: u16) -> bool {
    use std::io::{Read, Write};
    let Ok(mut stream) = std::net::TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
    if stream
        .write_all(b"GET /health HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
        .is_err()
    {
        return false;
    }
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    answer.contains("\"health\":\"true\"")
}

/// A TCP proxy in front of a member that holds back the first guarded txn (a commit) it
/// sees until the client gives up waiting and hangs up, then lets it through: a commit
/// applied after its sender took it for lost, as a slow network does.
pub struct HoldingProxy {
    pub endpoint: String,
}

impl HoldingProxy {
    pub fn start(target: &str) -> HoldingProxy {
        use std::io::{Read, Write};
        use std::net::TcpStream;
        use std::sync::Arc;
        use std::sync::atomic::{AtomicBool, Ordering};
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let endpoint = listener.local_addr().unwrap().to_string();
        let target = target.to_owned();
        let held = Arc::new(AtomicBool::new(false));
        std::thread::spawn(move || {
            for client in listener.incoming().flatten() {
                let Ok(server) = TcpStream::connect(&target) else {
                    continue;
                };
                let held = held.clone();
                let (mut from_client, mut to_server) =
                    (client.try_clone().unwrap(), server.try_clone().unwrap());
                let (mut from_server, mut to_client) = (server, client);
                std::thread::spawn(move || {
                    let _ = std::io::copy(&mut from_server, &mut to_client);
                });
                std::thread::spawn(move || {
                    let mut buf = [0u8; 64 * 1024];
                    loop {
                        let n = match from_client.read(&mut buf) {
                            Ok(0) | Err(_) => break,
                            Ok(n) => n,
                        };
                        let chunk = &buf[..n];
                        let pattern = b"\"result\":\"LESS\"";
                        let guarded = chunk.windows(pattern.len()).any(|w| w == pattern);
                        if guarded && !held.swap(true, Ordering::SeqCst) {
                            // Wait for the client to hang up, then deliver.
                            let mut rest = [0u8; 1024];
                            while matches!(from_client.read(&mut rest), Ok(n) if n > 0) {}
                            let _ = to_server.write_all(chunk);
                            std::thread::sleep(Duration::from_millis(200));
                            break;
                        }
                        if to_server.write_all(chunk).is_err() {
                            break;
                        }
                    }
                });
            }
        });
        HoldingProxy { endpoint }
    }
}
