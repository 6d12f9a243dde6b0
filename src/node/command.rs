//! The engine command that starts the node container, built from a validated request, and the private
//! files it refers to. Pure: nothing is written or run here, so `--dry-run` and the real run print the
//! very same command.
//!
//! Environment order is fixed and documented in `docs/node-run.md` (upstream iterates a Go map, so its
//! order changes from run to run): the datastore first (type, endpoints, certificate paths), then the
//! node (name, backend, CNI), then addressing (IPv4, IPv6, AS number), then pools. RBAC credentials
//! never appear on the command line, where `ps` shows them to every user: they go into a 0600
//! environment file passed with `--env-file`.

use std::fmt;
use std::path::{Path, PathBuf};

use super::request::{DefaultPools, Lifecycle, NodeRunRequest};
use super::{CONTAINER_NAME, Engine};
use crate::config::{EndpointSource, Pem, PemOrigin};
use crate::redaction::shell_quote;

/// Where the certificate files appear inside the container (upstream's fixed paths).
pub const CONTAINER_CA_PATH: &str = "/etc/calico/certs/ca_cert.crt";
pub const CONTAINER_CERT_PATH: &str = "/etc/calico/certs/cert.crt";
pub const CONTAINER_KEY_PATH: &str = "/etc/calico/certs/key.pem";

/// The file holding `ETCD_USERNAME` and `ETCD_PASSWORD`, in the secrets directory.
pub const CREDENTIALS_FILE: &str = "etcd-credentials.env";

/// A host path mounted into the container.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mount {
    pub host: PathBuf,
    pub container: String,
    pub read_only: bool,
}

impl fmt::Display for Mount {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.host.display(), self.container)?;
        if self.read_only {
            f.write_str(":ro")?;
        }
        Ok(())
    }
}

/// A file netctl writes (mode 0600, in a 0700 directory) before running the command: inline PEM
/// material or the credentials environment file. `Debug` never shows the contents.
#[derive(Clone, PartialEq, Eq)]
pub struct PrivateFile {
    pub path: PathBuf,
    /// What the file holds, for messages (`etcd CA certificate`, ...).
    pub purpose: &'static str,
    pub contents: Vec<u8>,
}

impl fmt::Debug for PrivateFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "PrivateFile({}, {}, {} bytes)",
            self.path.display(),
            self.purpose,
            self.contents.len()
        )
    }
}

/// The engine invocation that starts the node container.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContainerCommand {
    pub engine: Engine,
    /// Arguments after the program name, starting with `run`.
    pub arguments: Vec<String>,
    /// Files the arguments refer to that netctl must write first.
    pub private_files: Vec<PrivateFile>,
    /// Host directories the container writes to. Docker creates a missing `-v` source, podman refuses
    /// it, so host preparation creates them.
    pub host_directories: Vec<PathBuf>,
    pub lifecycle: Lifecycle,
}

impl ContainerCommand {
    /// Builds the command for `request` running `image` with `engine`.
    pub fn build(request: &NodeRunRequest, image: &str, engine: Engine) -> ContainerCommand {
        let mut environment: Vec<(&str, String)> = vec![("DATASTORE_TYPE", "etcdv3".into())];
        match &request.etcd.endpoints {
            EndpointSource::Static(list) => {
                let urls: Vec<String> = list.iter().map(|endpoint| endpoint.url()).collect();
                environment.push(("ETCD_ENDPOINTS", urls.join(",")));
            }
            EndpointSource::Srv { domain } => {
                environment.push(("ETCD_DISCOVERY_SRV", domain.clone()));
            }
        }

        let mut mounts = vec![
            Mount::writable(&request.log_dir, "/var/log/calico"),
            Mount::writable(Path::new("/var/run/calico"), "/var/run/calico"),
            Mount::writable(Path::new("/var/lib/calico"), "/var/lib/calico"),
            Mount::writable(Path::new("/lib/modules"), "/lib/modules"),
            Mount::writable(Path::new("/run"), "/run"),
        ];
        if let Some(felix_config) = &request.felix_config {
            mounts.push(Mount::read_only(felix_config, "/etc/calico/felix.cfg"));
        }

        let mut private_files = Vec::new();
        let secrets_dir = &request.secrets_dir;
        let mut certificate = |variable: &'static str,
                               container: &'static str,
                               pem: &Pem,
                               file_name: &str,
                               purpose: &'static str| {
            let host = match &pem.origin {
                PemOrigin::File(path) => path.clone(),
                PemOrigin::Inline => {
                    let path = secrets_dir.join(file_name);
                    private_files.push(PrivateFile {
                        path: path.clone(),
                        purpose,
                        contents: pem.bytes.clone(),
                    });
                    path
                }
            };
            environment.push((variable, container.to_string()));
            mounts.push(Mount::read_only(&host, container));
        };
        if let Some(tls) = &request.etcd.tls {
            if let Some(ca) = &tls.ca {
                certificate(
                    "ETCD_CA_CERT_FILE",
                    CONTAINER_CA_PATH,
                    ca,
                    "ca_cert.crt",
                    "etcd CA certificate",
                );
            }
            if let Some(identity) = &tls.identity {
                certificate(
                    "ETCD_CERT_FILE",
                    CONTAINER_CERT_PATH,
                    &identity.certificate,
                    "cert.crt",
                    "etcd client certificate",
                );
                certificate(
                    "ETCD_KEY_FILE",
                    CONTAINER_KEY_PATH,
                    &identity.key,
                    "key.pem",
                    "etcd client key",
                );
            }
        }

        environment.push(("NODENAME", request.node_name.clone()));
        environment.push(("CALICO_NETWORKING_BACKEND", request.backend.as_str().into()));
        environment.push(("CALICO_MANAGE_CNI", "false".into()));
        if let Some(ipv4) = &request.ipv4 {
            environment.push(("IP", ipv4.to_string()));
        }
        if !request.ipv4_autodetection.is_default() {
            environment.push((
                "IP_AUTODETECTION_METHOD",
                request.ipv4_autodetection.to_string(),
            ));
        }
        if let Some(ipv6) = &request.ipv6 {
            environment.push(("IP6", ipv6.to_string()));
        }
        if !request.ipv6_autodetection.is_default() {
            environment.push((
                "IP6_AUTODETECTION_METHOD",
                request.ipv6_autodetection.to_string(),
            ));
        }
        if let Some(as_number) = &request.as_number {
            environment.push(("AS", as_number.to_string()));
        }
        if request.default_pools == DefaultPools::Skip {
            environment.push(("NO_DEFAULT_POOLS", "true".into()));
        }

        let mut arguments: Vec<String> = [
            "run",
            "--net=host",
            "--privileged",
            &format!("--name={CONTAINER_NAME}"),
        ]
        .iter()
        .map(|argument| argument.to_string())
        .collect();
        match request.lifecycle {
            Lifecycle::InitSystem => arguments.push("--rm".into()),
            Lifecycle::Engine => {
                arguments.push("-d".into());
                arguments.push("--restart=always".into());
            }
        }
        for (variable, value) in environment {
            arguments.push("-e".into());
            arguments.push(format!("{variable}={value}"));
        }
        // The engine passes these to the container exactly like `-e`, but they never reach argv.
        // Upstream does not pass RBAC credentials at all
        // (`calicoctl/calicoctl/commands/node/run.go`), which leaves an RBAC-protected etcd
        // unusable by the agent; netctl passes the same variables it uses itself
        // (`docs/node-run.md`, "Secrets").
        if let Some(credentials) = &request.etcd.credentials {
            let path = secrets_dir.join(CREDENTIALS_FILE);
            private_files.push(PrivateFile {
                path: path.clone(),
                purpose: "etcd user name and password",
                contents: format!(
                    "ETCD_USERNAME={}\nETCD_PASSWORD={}\n",
                    credentials.username,
                    credentials.password.expose()
                )
                .into_bytes(),
            });
            arguments.push(format!("--env-file={}", path.display()));
        }
        for mount in mounts {
            arguments.push("-v".into());
            arguments.push(mount.to_string());
        }
        arguments.push(image.to_string());

        ContainerCommand {
            engine,
            arguments,
            private_files,
            host_directories: vec![
                request.log_dir.clone(),
                PathBuf::from("/var/run/calico"),
                PathBuf::from("/var/lib/calico"),
            ],
            lifecycle: request.lifecycle,
        }
    }

    /// The command as one shell line that can be copied and pasted.
    pub fn shell_line(&self) -> String {
        std::iter::once(self.engine.program().to_string())
            .chain(self.arguments.iter().map(|argument| shell_quote(argument)))
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// The command that stops the container (for init systems).
    pub fn stop_line(&self) -> String {
        format!("{} stop {CONTAINER_NAME}", self.engine.program())
    }
}

impl Mount {
    fn writable(host: &Path, container: &str) -> Mount {
        Mount {
            host: host.to_path_buf(),
            container: container.to_string(),
            read_only: false,
        }
    }

    fn read_only(host: &Path, container: &str) -> Mount {
        Mount {
            host: host.to_path_buf(),
            container: container.to_string(),
            read_only: true,
        }
    }
}

/// What `--dry-run` prints on stdout: the command, how to use it, and the files it needs.
pub fn dry_run_text(command: &ContainerCommand) -> String {
    let mut text = format!(
        "Start the node container with this command:\n\n{}\n\n",
        command.shell_line()
    );
    match command.lifecycle {
        Lifecycle::InitSystem => {
            text.push_str(&format!(
                "Stop it with this command:\n\n{}\n\n",
                command.stop_line()
            ));
        }
        Lifecycle::Engine => text.push_str(
            "To start the container from an init system such as systemd, add --init-system:\n\
             the container then runs in the foreground, and the stop command is shown too.\n\n",
        ),
    }
    if !command.private_files.is_empty() {
        text.push_str(
            "The command reads these files, which netctl writes (mode 0600) when it starts the container;\n\
             --dry-run does not write them:\n",
        );
        for file in &command.private_files {
            text.push_str(&format!("  {}  ({})\n", file.path.display(), file.purpose));
        }
        text.push('\n');
    }
    text
}
