//! The hub's connection string, with `sslmode` and `sslrootcert` as libpq reads
//! them (the PostgreSQL driver knows only disable/prefer/require):
//! - `disable`: no TLS;
//! - `prefer` (the default) and `require`: TLS (required or not), the server's
//!   certificate not checked, as libpq does without a root certificate;
//! - `verify-ca`: the certificate must chain to `sslrootcert` (or the system's
//!   roots); `verify-full`: and name the host.

use std::str::FromStr;
use std::time::Duration;

use postgres::config::SslMode;
use postgres::{Client, Config};
use postgres_native_tls::MakeTlsConnector;

use crate::error::{Error, Result};

/// How long a connection attempt may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// A parsed hub connection string.
#[derive(Clone)]
pub struct HubUrl {
    config: Config,
    mode: String,
    root_cert: Option<Vec<u8>>,
}

impl std::fmt::Debug for HubUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.describe())
    }
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            if let Some(v) = std::str::from_utf8(&b[i + 1..i + 3]).ok().and_then(|h| u8::from_str_radix(h, 16).ok()) {
                out.push(v);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Removes `sslmode` and `sslrootcert` from a URL or key=value string; returns
/// the rest and the two values.
fn split_tls(s: &str) -> (String, Option<String>, Option<String>) {
    let (mut mode, mut root) = (None, None);
    let mut take = |k: &str, v: String| match k {
        "sslmode" => {
            mode = Some(v);
            true
        }
        "sslrootcert" => {
            root = Some(v);
            true
        }
        _ => false,
    };
    if s.starts_with("postgres://") || s.starts_with("postgresql://") {
        let Some((base, query)) = s.split_once('?') else { return (s.to_string(), None, None) };
        let kept: Vec<&str> = query
            .split('&')
            .filter(|p| !p.is_empty())
            .filter(|p| match p.split_once('=') {
                Some((k, v)) => !take(k, percent_decode(v)),
                None => true,
            })
            .collect();
        let rest = if kept.is_empty() { base.to_string() } else { format!("{base}?{}", kept.join("&")) };
        (rest, mode, root)
    } else {
        let kept: Vec<&str> = s
            .split_whitespace()
            .filter(|p| match p.split_once('=') {
                Some((k, v)) => !take(k.trim(), v.trim_matches('\'').to_string()),
                None => true,
            })
            .collect();
        (kept.join(" "), mode, root)
    }
}

impl HubUrl {
    /// Parses a connection string (`postgresql://user:pw@host:port/db?sslmode=…` or
    /// `host=… user=… sslmode=…`). The error never repeats the string.
    pub fn parse(s: &str) -> Result<HubUrl> {
        let (rest, mode, root) = split_tls(s.trim());
        let mut config = Config::from_str(&rest).map_err(|e| {
            Error::invalid(format!("the hub connection string is not valid: {}", scrub(&e.to_string(), s)))
        })?;
        let mode = mode.unwrap_or_else(|| "prefer".into());
        config.ssl_mode(match mode.as_str() {
            "disable" => SslMode::Disable,
            "allow" | "prefer" => SslMode::Prefer,
            "require" | "verify-ca" | "verify-full" => SslMode::Require,
            other => {
                return Err(Error::invalid(format!(
                    "sslmode {other:?} is not one of disable, allow, prefer, require, verify-ca, verify-full"
                )))
            }
        });
        let root_cert = match &root {
            Some(path) => Some(std::fs::read(path).map_err(|e| Error::invalid(format!("sslrootcert {path}: {e}")))?),
            None => None,
        };
        if config.get_application_name().is_none() {
            config.application_name("robotmem-sync");
        }
        config.connect_timeout(CONNECT_TIMEOUT);
        // A link that goes silent (no reset: a radio out of range) fails a
        // waiting call within about a minute, so the loop reconnects.
        config
            .keepalives_idle(Duration::from_secs(30))
            .keepalives_interval(Duration::from_secs(10))
            .keepalives_retries(3);
        config.tcp_user_timeout(Duration::from_secs(60));
        Ok(HubUrl { config, mode, root_cert })
    }

    /// Who and where, without the password: `user@host:port/db (sslmode=…)`.
    pub fn describe(&self) -> String {
        let host = self
            .config
            .get_hosts()
            .iter()
            .map(|h| match h {
                postgres::config::Host::Tcp(h) => h.clone(),
                postgres::config::Host::Unix(p) => p.display().to_string(),
            })
            .collect::<Vec<_>>()
            .join(",");
        let port = self.config.get_ports().first().copied().unwrap_or(5432);
        format!(
            "{}@{}:{}/{} (sslmode={})",
            self.config.get_user().unwrap_or("?"),
            if host.is_empty() { "localhost".into() } else { host },
            port,
            self.config.get_dbname().unwrap_or("?"),
            self.mode
        )
    }

    pub fn user(&self) -> Option<&str> {
        self.config.get_user()
    }

    fn tls(&self) -> Result<MakeTlsConnector> {
        let mut b = native_tls::TlsConnector::builder();
        match self.mode.as_str() {
            "verify-full" => {}
            "verify-ca" => {
                b.danger_accept_invalid_hostnames(true);
            }
            _ => {
                b.danger_accept_invalid_certs(true).danger_accept_invalid_hostnames(true);
            }
        }
        if let Some(pem) = &self.root_cert {
            let cert =
                native_tls::Certificate::from_pem(pem).map_err(|e| Error::invalid(format!("sslrootcert: {e}")))?;
            b.add_root_certificate(cert).disable_built_in_roots(true);
        }
        let c = b.build().map_err(|e| Error::new(crate::error::Status::Io, format!("TLS setup failed: {e}")))?;
        Ok(MakeTlsConnector::new(c))
    }

    /// Opens a connection.
    pub fn connect(&self) -> Result<Client> {
        self.config.connect(self.tls()?).map_err(|e| {
            let mut e = super::hub_error(e);
            e.message = format!("{} [{}]", e.message, self.describe());
            e
        })
    }
}

/// `msg` with any part of the connection string `secret` that could be a
/// password removed (a parse error may quote the string).
fn scrub(msg: &str, secret: &str) -> String {
    let mut out = msg.to_string();
    if let Some(pw) = secret
        .split_once("://")
        .and_then(|(_, r)| r.split_once('@'))
        .and_then(|(ui, _)| ui.split_once(':'))
        .map(|x| x.1)
    {
        if !pw.is_empty() {
            out = out.replace(pw, "***");
        }
    }
    for part in secret.split_whitespace() {
        if let Some(pw) = part.strip_prefix("password=") {
            if !pw.is_empty() {
                out = out.replace(pw, "***");
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sslmode_and_root_are_taken_out_of_either_form() {
        let (rest, mode, root) =
            split_tls("postgresql://u:p@h:5/db?sslmode=verify-full&sslrootcert=%2Ftmp%2Fca.crt&connect_timeout=3");
        assert_eq!(rest, "postgresql://u:p@h:5/db?connect_timeout=3");
        assert_eq!(mode.as_deref(), Some("verify-full"));
        assert_eq!(root.as_deref(), Some("/tmp/ca.crt"));
        let (rest, mode, root) = split_tls("host=h user=u sslmode=require dbname=d");
        assert_eq!(rest, "host=h user=u dbname=d");
        assert_eq!(mode.as_deref(), Some("require"));
        assert_eq!(root, None);
        let (rest, mode, _) = split_tls("postgresql://u@h/db");
        assert_eq!((rest.as_str(), mode), ("postgresql://u@h/db", None));
    }

    #[test]
    fn descriptions_and_errors_never_carry_the_password() {
        let u = HubUrl::parse("postgresql://robot:s3cret-pw@127.0.0.1:5544/fleet?sslmode=disable").unwrap();
        assert_eq!(u.describe(), "robot@127.0.0.1:5544/fleet (sslmode=disable)");
        assert!(!format!("{u:?}").contains("s3cret"));
        let e = HubUrl::parse("postgresql://robot:s3cret-pw@127.0.0.1:notaport/fleet").unwrap_err();
        assert!(!e.message.contains("s3cret"), "{}", e.message);
        let e = HubUrl::parse("host=h password=s3cret-pw sslmode=bogus").unwrap_err();
        assert!(!e.message.contains("s3cret"), "{}", e.message);
        assert!(HubUrl::parse("host=h sslmode=verify-full sslrootcert=/nonexistent/ca.crt").is_err());
    }

    #[test]
    fn percent_decoding_keeps_what_is_not_an_escape() {
        assert_eq!(percent_decode("a%2Fb%zz%4"), "a/b%zz%4");
        assert_eq!(percent_decode("%é%"), "%é%");
    }
}
