//! A real OpenSSH server on 127.0.0.1 for tests, with generated keys and an ssh_config for it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct Sshd {
    pub dir: tempfile::TempDir,
    pub port: u16,
    /// An ssh_config with `Host exprtest` (pass as EXPR_SSH_CONFIG).
    pub config: PathBuf,
    child: Child,
}

/// A TCP port nothing listens on, for a server a test starts later. Drawn below the kernel's
/// ephemeral range (32768–60999): a port the kernel hands out (`bind :0`) is also what any
/// outgoing connection of a concurrent test may take as its local port before the server binds it
/// (CI saw `port … is already in use before the server started`). Within one test binary no port
/// is handed out twice; binaries start from a place their pid chooses.
pub fn free_port() -> u16 {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    const LOW: u32 = 20000;
    const SPAN: u32 = 12000;
    let start = std::process::id().wrapping_mul(7919) % SPAN;
    for _ in 0..SPAN {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let port = (LOW + (start + n) % SPAN) as u16;
        let free = |ip: &str| std::net::TcpListener::bind((ip, port)).is_ok();
        if free("0.0.0.0") && free("127.0.0.1") {
            return port;
        }
    }
    panic!("no free TCP port in {LOW}..{}", LOW + SPAN)
}

impl Sshd {
    /// Start sshd, or explain why it cannot run here. With EXPR_REQUIRE_SSHD set (CI), a missing
    /// sshd is a failure, not a skip.
    pub fn start() -> Option<Sshd> {
        let why = if !Path::new("/usr/sbin/sshd").exists() {
            Some("/usr/sbin/sshd is not installed (apt-get install openssh-server)")
        } else if unsafe { libc::geteuid() } != 0 {
            Some("the sshd fixture logs in as root and needs root")
        } else {
            None
        };
        if let Some(why) = why {
            super::skip(why);
            return None;
        }
        let dir = tempfile::Builder::new()
            .prefix("expr-sshd")
            .tempdir()
            .unwrap();
        let d = dir.path();
        for k in ["host", "client"] {
            let st = Command::new("ssh-keygen")
                .args(["-q", "-t", "ed25519", "-N", "", "-f"])
                .arg(d.join(format!("{k}_ed25519")))
                .status()
                .unwrap();
            assert!(st.success());
        }
        std::fs::copy(d.join("client_ed25519.pub"), d.join("authorized_keys")).unwrap();
        let _ = std::fs::create_dir_all("/run/sshd");
        let port = free_port();
        std::fs::write(
            d.join("sshd_config"),
            format!(
                "Port {port}\nListenAddress 127.0.0.1\nHostKey {d}/host_ed25519\nPidFile {d}/sshd.pid\nAuthorizedKeysFile {d}/authorized_keys\n\
                 PermitRootLogin prohibit-password\nPubkeyAuthentication yes\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n\
                 UsePAM no\nStrictModes no\nPrintMotd no\nMaxStartups 100:30:200\nMaxSessions 50\nSubsystem sftp internal-sftp\n",
                d = d.display()
            ),
        )
        .unwrap();
        let config = d.join("ssh_config");
        std::fs::write(
            &config,
            format!(
                "Host exprtest exprtest2\n  HostName 127.0.0.1\n  User root\n  IdentityFile {d}/client_ed25519\n  IdentitiesOnly yes\n  StrictHostKeyChecking no\n  UserKnownHostsFile /dev/null\n  LogLevel ERROR\n  KexAlgorithms curve25519-sha256\n",
                d = d.display()
            ),
        )
        .unwrap();
        let child = Command::new("/usr/sbin/sshd")
            .args(["-D", "-f"])
            .arg(d.join("sshd_config"))
            .arg("-E")
            .arg(d.join("sshd.log"))
            .stdin(Stdio::null())
            .spawn()
            .unwrap();
        let end = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                Instant::now() < end,
                "sshd did not listen: {}",
                std::fs::read_to_string(d.join("sshd.log")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        Some(Sshd {
            dir,
            port,
            config,
            child,
        })
    }
}

impl Drop for Sshd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
