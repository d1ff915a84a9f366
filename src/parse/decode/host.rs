//! `host` and `slurm` nodes: a host's address, repo and environment, an allocation.

use std::collections::BTreeMap;

use kdl::KdlNode;

use crate::model::diag::{Code, Diag};
use crate::model::schema::{self};
use crate::model::*;

use super::walker::*;

impl Decoder<'_> {
    pub(super) fn host(&mut self, node: &KdlNode) -> Option<Host> {
        let spec = &schema::TOP[1];
        let (args, props) = self.entries(node, spec);
        let name = args.first()?.val.to_string();
        let loc = self.loc(node.span());
        let ssh = props
            .get("ssh")
            .map(|g| g.val.to_string())
            .unwrap_or_else(|| {
                if name == "local" {
                    "local".into()
                } else {
                    name.clone()
                }
            });
        let slurm = props.get("slurm").map(|g| NodePlace {
            alloc: g.val.to_string(),
            node: props.get("node").and_then(|g| g.val.as_int()).unwrap_or(0),
            job: None,
            nodename: None,
            launch_args: Vec::new(),
            here: false,
            new_job: Vec::new(),
        });
        if let Some(p) = &slurm {
            for k in ["ssh", "ip", "ssh-port"] {
                if let Some(g) = props.get(k) {
                    let mut d = Diag::warning(
                        Code::InvalidValue,
                        format!(
                            "host `{name}` is a node of `{}`: `{k}` does not apply and is ignored",
                            p.alloc
                        ),
                    )
                    .at(&self.src, g.loc.span);
                    d.help = Some("its name and address come from the allocation at run time; drop it (or drop `slurm=` to reach the host over ssh)".into());
                    self.diags.push(d);
                }
            }
            return Some(Host {
                ip: format!("slurm:{}:{}", p.alloc, p.node),
                ssh: "local".into(),
                ssh_port: 22,
                ssh_port_loc: None,
                repo: props
                    .get("repo")
                    .map(|g| g.val.to_string())
                    .unwrap_or_default(),
                gpus: props.get("gpus").and_then(|g| g.val.as_int()),
                env: self.host_env(node),
                name,
                loc,
                place: slurm,
                written: Default::default(),
            });
        } else if let Some(g) = props.get("node") {
            self.err_help(
                Code::InvalidValue,
                "`node=` is for a host on a Slurm allocation",
                g.loc.span,
                "add `slurm=\"NAME\"`, or drop `node=`",
            );
        }
        let local = ssh == "local";
        // `host lcoal`: a misspelt `local` without `ssh=` is one mistake, not two missing values
        let near_local = !local
            && !props.contains_key("ssh")
            && crate::util::suggest::did_you_mean(&name, ["local"]).is_some();
        let missing: Vec<(&str, &str, &str)> = [
            ("ip", "ip=\"10.0.2.190\"", "the data-plane address"),
            (
                "repo",
                "repo=\"/data/RecStore\"",
                "the checkout on that host",
            ),
        ]
        .into_iter()
        .filter(|(k, _, _)| !local && !props.contains_key(*k))
        .collect();
        if near_local && !missing.is_empty() {
            let m = format!("unknown host `{name}`: did you mean `local`?");
            let e = self.err(Code::MissingValue, m, node.name().span());
            e.label = Some("not `local`".into());
            e.help = Some(
                "`local` is this machine; any other name is a host reached over ssh, which needs `ip` and `repo`"
                    .into(),
            );
        } else {
            for (key, example, what) in &missing {
                let m = format!("host `{name}` is reached over ssh and needs `{key}`");
                let e = self.err(Code::MissingValue, m, node.name().span());
                e.label = Some(format!("`{key}` missing"));
                e.help = Some(format!("add `{example}` ({what})"));
            }
        }
        let ip = match props.get("ip") {
            Some(g) => g.val.to_string(),
            None if local => "127.0.0.1".into(),
            None => String::new(),
        };
        let repo = match props.get("repo") {
            Some(g) => g.val.to_string(),
            None if local => ".".into(),
            None => String::new(),
        };
        let env = self.host_env(node);
        Some(Host {
            name,
            ssh,
            ssh_port: props
                .get("ssh-port")
                .and_then(|g| g.val.as_int())
                .unwrap_or(22),
            ssh_port_loc: props.get("ssh-port").map(|g| g.loc.clone()),
            ip,
            repo,
            gpus: props.get("gpus").and_then(|g| g.val.as_int()),
            env,
            loc,
            place: None,
            written: crate::model::HostLocs {
                ssh: props.get("ssh").map(|g| g.loc.clone()),
                ip: props.get("ip").map(|g| g.loc.clone()),
            },
        })
    }

    /// A host's `env` block.
    pub(super) fn host_env(&mut self, node: &KdlNode) -> Vec<(String, String)> {
        let mut env = Vec::new();
        let env_names: Vec<&str> = schema::HOST_CHILDREN.iter().map(|n| n.name).collect();
        // a name given again in a second `env` (the first won, silently; `--resolved` wrote
        // both, and that did not check)
        let mut first: BTreeMap<String, usize> = BTreeMap::new();
        for child in children(node) {
            if child.name().value() != "env" {
                self.unknown_node(child, &env_names, Some("host"));
                continue;
            }
            let (_, mut props) = self.entries(child, &schema::HOST_CHILDREN[0]);
            let again: Vec<String> = props
                .keys()
                .filter(|k| first.contains_key(*k))
                .cloned()
                .collect();
            for k in again {
                let Some(g) = props.remove(&k) else { continue };
                let line = first[&k];
                let d = self.err(
                    Code::DuplicateName,
                    format!("env `{k}` is given twice on this host"),
                    g.loc.span,
                );
                d.label = Some("given again".into());
                d.help = Some(format!("keep one: it is first given on line {line}"));
            }
            for (k, g) in &props {
                first
                    .entry(k.clone())
                    .or_insert_with(|| self.src.line_col(g.loc.span.offset()).0);
            }
            let got = self.env_props(props);
            env.extend(got);
        }
        env
    }

    /// Properties that name environment variables: each name checked.
    pub(super) fn env_props(&mut self, props: BTreeMap<String, Got>) -> Vec<(String, String)> {
        let mut env = Vec::new();
        {
            for (k, g) in props {
                let valid = k
                    .chars()
                    .next()
                    .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                    && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
                if !valid {
                    self.err_help(
                        Code::InvalidValue,
                        format!("`{k}` is not an environment variable name"),
                        g.loc.span,
                        "use letters, digits and `_`, not starting with a digit",
                    );
                    continue;
                }
                env.push((k, g.val.to_string()));
            }
        }
        env
    }

    /// `slurm NAME partition=… nodes=… time=…`
    pub(super) fn allocation(&mut self, node: &KdlNode) -> Option<Allocation> {
        let spec = schema::TOP
            .iter()
            .find(|t| t.name == "slurm")
            .expect("slurm in TOP");
        let (args, props) = self.entries(node, spec);
        let name = args.first()?.val.to_string();
        let s = |k: &str| props.get(k).map(|g| g.val.to_string());
        let words = |k: &str| {
            s(k).map(|v| v.split_whitespace().map(str::to_string).collect())
                .unwrap_or_default()
        };
        Some(Allocation {
            partition: s("partition"),
            account: s("account"),
            qos: s("qos"),
            time: s("time"),
            nodes: props.get("nodes").and_then(|g| g.val.as_int()).unwrap_or(1),
            gpus_per_node: props.get("gpus-per-node").and_then(|g| g.val.as_int()),
            constraint: s("constraint"),
            alloc_args: words("alloc-args"),
            srun_args: words("srun-args"),
            repo: s("repo").unwrap_or_else(|| ".".into()),
            array: match props.get("mode") {
                Some(g) => match g.val.to_string().as_str() {
                    "array" => true,
                    "allocation" => false,
                    other => {
                        self.err_help(Code::InvalidValue, format!("`mode` is `allocation` or `array`, not `{other}`"), g.loc.span, "`array` runs one `sbatch --array` task per point; `allocation` (the default) one `salloc` for the run");
                        false
                    }
                },
                None => false,
            },
            throttle: props.get("throttle").and_then(|g| g.val.as_int()),
            loc: self.loc(node.span()),
            name,
        })
    }
}
