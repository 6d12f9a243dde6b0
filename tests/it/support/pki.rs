//! A throwaway PKI for TLS tests, generated with rcgen and written to a temporary directory.
//!
//! Layout (file names under [`Pki::dir`]):
//! - three self-signed CAs: `ca-a.pem`, `ca-b.pem`, `ca-c.pem` (C is never trusted by the servers);
//! - `ca-bundle.pem`: CA A followed by CA B, the servers' `--trusted-ca-file` and the clients' CA;
//! - `server.pem` / `server-key.pem`: issued by CA A, SANs `localhost`, `127.0.0.1`, `::1` (plus
//!   any [`PkiBuilder::server_san`]), EKU serverAuth + clientAuth (etcd 3.4 dials itself with it);
//! - `client-a.pem`, `client-b.pem`, `client-c.pem` and their `-key.pem`: clientAuth certificates with
//!   CN `netctl-client` from CA A, B and C.
//!
//! The client CN is deliberately not `root`: with `--client-cert-auth` and auth enabled, etcd takes
//! the CN as the user name, and a `root` CN would silently grant root access (gotcha G6).
//! Keys are EC P-256 in PKCS#8 and are written with mode 0600.

use std::fs;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose,
};
use tempfile::TempDir;

/// The common name of the default client certificates.
pub const CLIENT_CN: &str = "netctl-client";

/// One of the three test CAs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ca {
    /// Trusted by the servers; issued the server certificate.
    A,
    /// Trusted by the servers (second CA in the bundle).
    B,
    /// Not trusted by anyone: its client certificate must be rejected.
    C,
}

impl Ca {
    fn index(self) -> usize {
        match self {
            Ca::A => 0,
            Ca::B => 1,
            Ca::C => 2,
        }
    }

    fn letter(self) -> &'static str {
        match self {
            Ca::A => "a",
            Ca::B => "b",
            Ca::C => "c",
        }
    }
}

/// A certificate and its private key, as files and as PEM text (for inline configuration).
#[derive(Clone, Debug)]
pub struct CertPair {
    pub cert: PathBuf,
    pub key: PathBuf,
    pub cert_pem: String,
    pub key_pem: String,
}

/// Options for [`Pki::builder`].
#[derive(Debug, Default)]
pub struct PkiBuilder {
    extra_server_sans: Vec<String>,
}

impl PkiBuilder {
    /// Adds a subject alternative name (DNS name or IP address) to the server certificate, e.g. the
    /// SRV target names of a discovery test.
    pub fn server_san(mut self, name: impl Into<String>) -> Self {
        self.extra_server_sans.push(name.into());
        self
    }

    /// Generates every certificate and writes the files.
    pub fn build(self) -> Pki {
        let dir = tempfile::Builder::new()
            .prefix("netctl-test-pki-")
            .tempdir()
            .expect("create the PKI directory");
        // Lets `reap` remove the directory if this test process dies without dropping it.
        fs::write(
            dir.path().join(super::process::OWNER_PID_FILE),
            std::process::id().to_string(),
        )
        .expect("write owner pid file");
        let cas = [Ca::A, Ca::B, Ca::C].map(|ca| new_ca(ca, dir.path()));
        let bundle_pem = format!("{}{}", cas[0].1.cert_pem, cas[1].1.cert_pem);
        let bundle = dir.path().join("ca-bundle.pem");
        fs::write(&bundle, &bundle_pem).expect("write CA bundle");

        let mut server_sans = vec![
            "localhost".to_owned(),
            "127.0.0.1".to_owned(),
            "::1".to_owned(),
        ];
        server_sans.extend(self.extra_server_sans);
        let server = issue(
            &cas[0].0,
            dir.path(),
            "server",
            "netctl-test-server",
            &server_sans,
            &[
                ExtendedKeyUsagePurpose::ServerAuth,
                ExtendedKeyUsagePurpose::ClientAuth,
            ],
        );
        let clients = [Ca::A, Ca::B, Ca::C].map(|ca| {
            issue(
                &cas[ca.index()].0,
                dir.path(),
                &format!("client-{}", ca.letter()),
                CLIENT_CN,
                &[],
                &[ExtendedKeyUsagePurpose::ClientAuth],
            )
        });
        let [(issuer_a, ca_a), (issuer_b, ca_b), (issuer_c, ca_c)] = cas;
        Pki(Arc::new(PkiInner {
            issuers: [issuer_a, issuer_b, issuer_c],
            ca_certs: [ca_a, ca_b, ca_c],
            bundle,
            bundle_pem,
            server,
            clients,
            issued: AtomicUsize::new(0),
            dir,
        }))
    }
}

/// The generated PKI. Cheap to clone; the files live as long as the last clone (servers keep one,
/// so a restart finds its certificates).
#[derive(Clone)]
pub struct Pki(Arc<PkiInner>);

struct PkiInner {
    issuers: [CertifiedIssuer<'static, KeyPair>; 3],
    /// Each CA's certificate; its `key` is the CA private key file.
    ca_certs: [CertPair; 3],
    bundle: PathBuf,
    bundle_pem: String,
    server: CertPair,
    clients: [CertPair; 3],
    issued: AtomicUsize,
    // Last, so the files are removed after everything else is dropped.
    dir: TempDir,
}

impl std::fmt::Debug for Pki {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pki")
            .field("dir", &self.dir())
            .finish_non_exhaustive()
    }
}

impl Pki {
    /// Generates the default PKI (see the module documentation).
    pub fn generate() -> Pki {
        Pki::builder().build()
    }

    pub fn builder() -> PkiBuilder {
        PkiBuilder::default()
    }

    /// The directory holding every file.
    pub fn dir(&self) -> &Path {
        self.0.dir.path()
    }

    /// The bundle of CA A and CA B.
    pub fn ca_bundle(&self) -> &Path {
        &self.0.bundle
    }

    pub fn ca_bundle_pem(&self) -> &str {
        &self.0.bundle_pem
    }

    /// A CA's certificate (`cert`, `cert_pem`) and private key (`key`, `key_pem`).
    pub fn ca(&self, ca: Ca) -> &CertPair {
        &self.0.ca_certs[ca.index()]
    }

    /// The server certificate, issued by CA A.
    pub fn server(&self) -> &CertPair {
        &self.0.server
    }

    /// The client certificate with CN `netctl-client` issued by `ca`.
    pub fn client(&self, ca: Ca) -> &CertPair {
        &self.0.clients[ca.index()]
    }

    /// Issues one more client certificate with common name `cn` from `ca`, e.g. a CN equal to an
    /// etcd user name to test certificate-based authentication.
    pub fn issue_client(&self, ca: Ca, cn: &str) -> CertPair {
        let serial = self.0.issued.fetch_add(1, Ordering::Relaxed);
        issue(
            &self.0.issuers[ca.index()],
            self.dir(),
            &format!("extra-{serial}-client-{}", ca.letter()),
            cn,
            &[],
            &[ExtendedKeyUsagePurpose::ClientAuth],
        )
    }

    /// Issues one more server certificate from `ca` with the given subject alternative names.
    pub fn issue_server(&self, ca: Ca, sans: &[&str]) -> CertPair {
        let serial = self.0.issued.fetch_add(1, Ordering::Relaxed);
        let sans: Vec<String> = sans.iter().map(|san| (*san).to_owned()).collect();
        issue(
            &self.0.issuers[ca.index()],
            self.dir(),
            &format!("extra-{serial}-server-{}", ca.letter()),
            "netctl-test-server",
            &sans,
            &[
                ExtendedKeyUsagePurpose::ServerAuth,
                ExtendedKeyUsagePurpose::ClientAuth,
            ],
        )
    }
}

fn new_ca(ca: Ca, dir: &Path) -> (CertifiedIssuer<'static, KeyPair>, CertPair) {
    let mut params = CertificateParams::default();
    params.distinguished_name.push(
        DnType::CommonName,
        format!("netctl test CA {}", ca.letter().to_uppercase()),
    );
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let key = KeyPair::generate().expect("generate CA key");
    let key_pem = key.serialize_pem();
    let issuer = CertifiedIssuer::self_signed(params, key).expect("self-sign CA");
    let name = format!("ca-{}", ca.letter());
    let files = write_pair(dir, &name, issuer.pem(), key_pem);
    (issuer, files)
}

fn issue(
    issuer: &CertifiedIssuer<'static, KeyPair>,
    dir: &Path,
    name: &str,
    common_name: &str,
    sans: &[String],
    usages: &[ExtendedKeyUsagePurpose],
) -> CertPair {
    let mut params = CertificateParams::new(sans.to_vec()).expect("valid subject alt names");
    params
        .distinguished_name
        .push(DnType::CommonName, common_name);
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    params.extended_key_usages = usages.to_vec();
    params.use_authority_key_identifier_extension = true;
    let key = KeyPair::generate().expect("generate key");
    let cert = params.signed_by(&key, issuer).expect("sign certificate");
    write_pair(dir, name, cert.pem(), key.serialize_pem())
}

fn write_pair(dir: &Path, name: &str, cert_pem: String, key_pem: String) -> CertPair {
    let cert = dir.join(format!("{name}.pem"));
    let key = dir.join(format!("{name}-key.pem"));
    fs::write(&cert, &cert_pem).expect("write certificate");
    fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&key)
        .and_then(|mut file| file.write_all(key_pem.as_bytes()))
        .expect("write private key");
    CertPair {
        cert,
        key,
        cert_pem,
        key_pem,
    }
}
