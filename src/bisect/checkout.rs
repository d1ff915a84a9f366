//! The benchmarked checkout on every host a bisection's rounds use, and the build cache there.
//!
//! A host's repo lies in a git checkout on its machine: here for a local host (and for a node
//! of a Slurm allocation, whose files are on the allocation's shared filesystem, as for
//! `expr run`; the build's mark is then keyed by the allocation, the node being known only
//! once allocated), on the remote machine for an ssh host (reached through the system OpenSSH client, one multiplexed
//! connection per host for the whole bisection). Each measured commit is checked out on every
//! host in a detached worktree of that checkout at `<git common dir>/expr-bisect/<commit>` —
//! inside the repository's `.git`, never in the user's working tree, its HEAD or its branch —
//! and built there by the round's build phase. The worktree stays when the bisection ends: it
//! is the build cache. A commit built and tested on a host is marked by an empty file beside
//! its worktree, `<commit>.built-<machine>-<hash>`, keyed by the commit, the machine (its kernel
//! hostname) and a hash of the build and test commands on that host; a later round or a later
//! bisection of the same checkout finds the mark and skips both phases. A checkout on a
//! filesystem that several hosts share has one worktree per commit, made by the first host
//! that needs it and found by the others.

use std::path::PathBuf;

use crate::exec::backend::host::Ssh;
use crate::model::{Experiment, Host};
use crate::plan::Plan;
use crate::util::shell::quote;

use super::git::{self, At, Repo};
use super::probe::Repos;

/// The checkout of one host.
pub struct Tree {
    /// The host's name in the experiment.
    pub host: String,
    /// The ssh host, or none: the checkout is on this machine.
    pub remote: Option<Host>,
    pub top: String,
    /// The repo's path inside the checkout (`""` when it is the top).
    pub prefix: String,
    /// `<git common dir>/expr-bisect`: the worktrees and build marks.
    pub cache: String,
    /// The machine's name, for the build marks.
    pub machine: String,
}

/// The checkouts of every host, with the ssh connections they are reached through; dropping
/// it closes the connections.
pub struct Checkouts {
    pub trees: Vec<Tree>,
    ssh: Ssh,
    control: PathBuf,
    /// The hosts whose connection is open.
    opened: Vec<Host>,
}

/// The hosts a plan's steps run on, each once, sorted.
fn used(plan: &Plan) -> Vec<&str> {
    let mut used: Vec<&str> = plan.setup.iter().map(|s| s.host.as_str()).collect();
    for p in &plan.points {
        used.extend(p.steps.iter().map(|s| s.host.as_str()));
    }
    used.sort();
    used.dedup();
    used
}

/// A name made of plain characters, for a file name.
fn plain(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// FNV-1a, 64 bits: a hash that stays the same across builds of expr (a build mark's key).
fn fnv(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

impl Checkouts {
    /// Every host the plan uses: reach it, find the checkout its repo lies in. The hosts whose
    /// repo is on this machine's filesystem (local hosts, and nodes of a Slurm allocation,
    /// whose files are on its shared filesystem) must share one checkout.
    pub fn open(exp: &Experiment, plan: &Plan) -> Result<Checkouts, String> {
        let control = std::env::temp_dir().join(format!("expr-cm-bisect-{}", std::process::id()));
        let mut c = Checkouts {
            trees: Vec::new(),
            ssh: Ssh::new(control.clone()),
            control,
            opened: Vec::new(),
        };
        for name in used(plan) {
            let Some(h) = exp.host(name) else {
                continue;
            };
            // a node of a Slurm allocation sees its repo on the allocation's shared filesystem,
            // here: its worktree is made here, and built on the node by the round's build phase
            let allocation = h.place.as_ref().map(|p| p.alloc.clone());
            let remote = if h.is_local() || allocation.is_some() {
                None
            } else {
                c.ssh.open(h).map_err(|e| {
                    let port = c
                        .ssh
                        .effective_port(h)
                        .map_or("?".into(), |p| p.to_string());
                    format!(
                        "{:?}: host `{}` ({}, port {port}) is unreachable: {e}",
                        h.loc, h.name, h.ssh
                    )
                })?;
                c.opened.push(h.clone());
                Some(h.clone())
            };
            let at = match &remote {
                Some(r) => At::Ssh(&c.ssh, r),
                None => At::Here,
            };
            let repo = Repo { at, dir: &h.repo };
            let (top, prefix, common) =
                git::toplevel(&repo).map_err(|e| format!("{:?}: host `{}`: {e}", h.loc, h.name))?;
            let machine = match (&remote, &allocation) {
                // the node is known only once allocated; every node of the allocation builds
                // in the one worktree on the shared filesystem
                (None, Some(a)) => format!("slurm-{a}"),
                (None, None) => crate::exec::lock::this_host(),
                (Some(_), _) => repo
                    .sh("uname -n")
                    .map(|(_, o)| o.trim().to_string())
                    .unwrap_or_default(),
            };
            if remote.is_none() {
                if let Some(t0) = c.trees.iter().find(|t| t.remote.is_none() && t.top != top) {
                    return Err(format!(
                        "{:?}: host `{}` runs in {top}, another checkout than {} (host `{}`): bisect walks one checkout's commits",
                        h.loc, h.name, t0.top, t0.host
                    ));
                }
            }
            c.trees.push(Tree {
                host: h.name.clone(),
                remote,
                top,
                prefix,
                cache: format!("{}/expr-bisect", common.trim_end_matches('/')),
                machine: plain(if machine.is_empty() {
                    &h.name
                } else {
                    &machine
                }),
            });
        }
        if c.trees.is_empty() {
            return Err("the selection runs on no host".into());
        }
        // the commits are walked in a checkout on this machine when there is one
        c.trees.sort_by_key(|t| t.remote.is_some());
        Ok(c)
    }

    /// `dir` on the machine of `t`.
    pub fn repo<'a>(&'a self, t: &'a Tree, dir: &'a str) -> Repo<'a> {
        Repo {
            at: match &t.remote {
                Some(h) => At::Ssh(&self.ssh, h),
                None => At::Here,
            },
            dir,
        }
    }

    /// The checkout whose history is walked (good, bad and the range between them).
    pub fn primary(&self) -> Repo<'_> {
        let t = &self.trees[0];
        self.repo(t, &t.top)
    }

    /// The primary checkout's repo path inside it.
    pub fn prefix(&self) -> &str {
        &self.trees[0].prefix
    }

    /// Every other checkout has `sha`, or an error saying which lacks it.
    pub fn have(&self, sha: &str) -> Result<(), String> {
        for t in &self.trees[1..] {
            let spec = format!("{sha}^{{commit}}");
            if self
                .repo(t, &t.top)
                .git(&["cat-file", "-e", "--end-of-options", &spec])
                .is_err()
            {
                return Err(format!(
                    "host `{}`: its checkout {}{} lacks commit {}: fetch it there (every host builds the same commits)",
                    t.host,
                    t.top,
                    self.repo(t, &t.top).on(),
                    git::short(sha)
                ));
            }
        }
        Ok(())
    }

    /// The worktree of `sha` on `t`'s machine.
    pub fn worktree(&self, t: &Tree, sha: &str) -> String {
        format!("{}/{sha}", t.cache)
    }

    /// Each host's repo at `sha` (host, path on its machine), without checking anything out.
    pub fn repos_at(&self, sha: &str) -> Repos {
        self.trees
            .iter()
            .map(|t| {
                let wt = self.worktree(t, sha);
                let repo = if t.prefix.is_empty() {
                    wt
                } else {
                    format!("{wt}/{}", t.prefix)
                };
                (t.host.clone(), repo)
            })
            .collect()
    }

    /// Check `sha` out on every host (or find it checked out): each host's repo at `sha`, and
    /// the worktrees this call added.
    pub fn check_out(&self, sha: &str) -> Result<(Repos, Vec<String>), String> {
        let mut added = Vec::new();
        for t in &self.trees {
            let wt = self.worktree(t, sha);
            if git::worktree(&self.repo(t, &t.top), &wt, sha)? {
                added.push(format!("{wt}{}", self.repo(t, &t.top).on()));
            }
        }
        Ok((self.repos_at(sha), added))
    }

    /// The build mark of `sha` on `t` for these build and test commands.
    fn mark(&self, t: &Tree, sha: &str, setup: &str) -> String {
        format!("{}/{sha}.built-{}-{:016x}", t.cache, t.machine, fnv(setup))
    }

    /// Whether every host has built and tested `sha` with these commands (`setup`: each
    /// host's build and test commands).
    pub fn cached(&self, sha: &str, setup: &[(String, String)]) -> Result<bool, String> {
        for t in &self.trees {
            let mark = self.mark(t, sha, host_setup(setup, &t.host));
            if !self.repo(t, &t.top).exists(&mark)? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Mark `sha` built and tested on every host.
    pub fn mark_built(&self, sha: &str, setup: &[(String, String)]) -> Result<(), String> {
        for t in &self.trees {
            let mark = self.mark(t, sha, host_setup(setup, &t.host));
            let r = self.repo(t, &t.top);
            let (code, out) = r.sh(&format!(": > {}", quote(&mark)))?;
            if code != 0 {
                return Err(format!("cannot write {mark}{}: {}", r.on(), out.trim()));
            }
        }
        Ok(())
    }

    /// Where the worktrees are kept, per host, for the closing line.
    pub fn caches(&self) -> Vec<String> {
        let mut v: Vec<String> = self
            .trees
            .iter()
            .map(|t| format!("{}{}", t.cache, self.repo(t, &t.top).on()))
            .collect();
        v.dedup();
        v
    }
}

impl Drop for Checkouts {
    fn drop(&mut self) {
        for h in &self.opened {
            self.ssh.close(h);
        }
        let _ = std::fs::remove_dir_all(&self.control);
    }
}

/// A host's build and test commands in `setup` (`""`: none).
fn host_setup<'a>(setup: &'a [(String, String)], host: &str) -> &'a str {
    setup
        .iter()
        .find(|(h, _)| h == host)
        .map_or("", |(_, c)| c.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_build_mark_is_keyed_by_plain_names_and_a_stable_hash() {
        assert_eq!(plain("node-1.lab"), "node-1.lab");
        assert_eq!(plain("a b/../c"), "a_b_.._c");
        // FNV-1a's published test vectors: the key must not change between builds of expr
        assert_eq!(fnv(""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv("a"), 0xaf63_dc4c_8601_ec8c);
    }
}
