//! Who may use the dashboard: the holder of its token (specs/web.md *Safe by default*).
//! The token is random (or a person's, from `--token-file`); the first visit with
//! `?token=` trades it for a cookie; every other request must carry the cookie (or
//! `Authorization: Bearer`). On loopback the dashboard is opened by a host name of its
//! own ([`Token::host_label`]), so the cookie reaches no other local server. Actions also carry a CSRF value derived from the token.

use std::io::Read as _;
use std::path::Path;

/// The shortest token accepted from a file: 128 bits of hex.
pub(crate) const MIN_TOKEN_LEN: usize = 32;

/// The dashboard's secret.
#[derive(Clone)]
pub struct Token(String);

/// Never printed by a debug line or a panic.
impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token(…)")
    }
}

impl Token {
    /// 32 random bytes from the kernel, as hex.
    pub fn random() -> std::io::Result<Token> {
        let mut bytes = [0u8; 32];
        std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
        Ok(Token(hex(&bytes)))
    }

    /// The token kept in `path`, or a new one written there (mode 0600) when there is
    /// no such file yet.
    pub fn from_file(path: &Path) -> Result<Token, String> {
        match std::fs::read_to_string(path) {
            Ok(text) => Token::parse(text.trim()).map_err(|why| {
                format!(
                    "{}: {why}; write a token of at least {MIN_TOKEN_LEN} characters (A-Z a-z 0-9 - _) there, or remove the file for a new one",
                    path.display()
                )
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let token = Token::random().map_err(|e| format!("no random token: {e}"))?;
                if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
                    std::fs::create_dir_all(parent).map_err(|e| {
                        format!("cannot make {} for the token: {e}", parent.display())
                    })?;
                }
                write_private(path, &format!("{}\n", token.0))
                    .map_err(|e| format!("cannot write the token to {}: {e}", path.display()))?;
                Ok(token)
            }
            Err(e) => Err(format!("cannot read the token in {}: {e}", path.display())),
        }
    }

    /// A person's token: long enough, and only characters safe in a URL and a cookie.
    pub fn parse(text: &str) -> Result<Token, String> {
        if text.len() < MIN_TOKEN_LEN {
            return Err(format!(
                "the token has {} characters, fewer than {MIN_TOKEN_LEN}",
                text.len()
            ));
        }
        if !text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        {
            return Err("the token holds characters other than A-Z a-z 0-9 - _".into());
        }
        Ok(Token(text.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether `presented` is this token, in time that does not depend on where they
    /// differ.
    pub(crate) fn matches(&self, presented: &str) -> bool {
        same(self.0.as_bytes(), presented.as_bytes())
    }

    /// The host name the dashboard is opened by on this machine, `liza-<10 hex>.localhost`
    /// (browsers take every `*.localhost` name to loopback). Browsers send a cookie to
    /// every port of the host it was set for: under a name of its own, the dashboard's
    /// cookie never reaches another server on this machine — one an agent runs
    /// included — and the name, derived from the token, cannot be guessed to lure the
    /// person there.
    pub fn host_label(&self) -> String {
        let key = blake3::hash(self.0.as_bytes());
        let hash = blake3::keyed_hash(key.as_bytes(), b"liza serve: host name").to_hex();
        format!("liza-{}.localhost", &hash[..10])
    }

    /// The value every action form carries: a keyed hash of the token, so a page that
    /// shows it never shows the token itself.
    pub fn csrf(&self) -> String {
        let key = blake3::hash(self.0.as_bytes());
        blake3::keyed_hash(key.as_bytes(), b"liza serve: actions")
            .to_hex()
            .to_string()
    }
}

/// Constant-time equality of two byte strings (their lengths are not secret).
pub(crate) fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn write_private(path: &Path, text: &str) -> std::io::Result<()> {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)?;
    file.write_all(text.as_bytes())?;
    file.sync_all()
}

/// The cookie's name: one per port, so two dashboards on one host keep their own.
pub(crate) fn cookie_name(port: u16) -> String {
    format!("liza_token_{port}")
}

/// The `Set-Cookie` value the first visit gets: never readable by a script, never sent
/// by another site's page.
pub(crate) fn set_cookie(port: u16, token: &Token) -> String {
    format!(
        "{}={}; Path=/; HttpOnly; SameSite=Strict",
        cookie_name(port),
        token.as_str()
    )
}

/// Whether a request presents `token`: a cookie of this port's name holding it (any of
/// them: a page of another port on the same host may have set one of that name too), or
/// a bearer token.
pub(crate) fn admitted<'a>(
    cookies: impl Iterator<Item = &'a str>,
    authorization: Option<&'a str>,
    port: u16,
    token: &Token,
) -> bool {
    let name = cookie_name(port);
    let by_cookie = cookies
        .flat_map(|header| header.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .any(|(k, v)| k == name && token.matches(v));
    by_cookie
        || authorization
            .and_then(|a| a.strip_prefix("Bearer "))
            .is_some_and(|t| token.matches(t.trim()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_random_token_is_64_hex_digits_and_new_each_time() {
        let a = Token::random().unwrap();
        let b = Token::random().unwrap();
        assert_eq!(a.as_str().len(), 64);
        assert!(a.as_str().bytes().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a.as_str(), b.as_str());
    }

    #[test]
    fn a_short_or_strange_token_is_refused() {
        assert!(Token::parse("short").unwrap_err().contains("fewer than 32"));
        assert!(
            Token::parse(&format!("{};x", "a".repeat(40)))
                .unwrap_err()
                .contains("other than")
        );
        assert!(Token::parse(&"a".repeat(32)).is_ok());
    }

    #[test]
    fn the_token_file_is_made_private_then_reused() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("token");
        let first = Token::from_file(&path).unwrap();
        assert_eq!(
            std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o600
        );
        assert_eq!(Token::from_file(&path).unwrap().as_str(), first.as_str());
        std::fs::write(&path, "tiny\n").unwrap();
        let refused = Token::from_file(&path).err().unwrap();
        assert!(refused.contains("fewer than 32"), "{refused}");
        assert_eq!(std::fs::read(&path).unwrap(), b"tiny\n");
    }

    #[test]
    fn a_cookie_of_this_port_holding_the_token_admits() {
        let token = Token::parse(&"t".repeat(40)).unwrap();
        let mine = format!("liza_token_7780={}", "t".repeat(40));
        let tossed = "liza_token_7780=planted";
        // Another port's cookie, or one a page of another port set under this name, does
        // not hide the person's.
        let headers = [format!("a=1; {tossed}; liza_token_7781=x"), mine.clone()];
        assert!(admitted(
            headers.iter().map(String::as_str),
            None,
            7780,
            &token
        ));
        assert!(!admitted([tossed].into_iter(), None, 7780, &token));
        assert!(!admitted([mine.as_str()].into_iter(), None, 7781, &token));
        let bearer = format!("Bearer {}", "t".repeat(40));
        assert!(admitted([].into_iter(), Some(&bearer), 7780, &token));
        assert!(!admitted([].into_iter(), Some("Bearer nope"), 7780, &token));
        assert!(!admitted([].into_iter(), None, 7780, &token));
    }

    #[test]
    fn the_host_name_is_the_tokens_own() {
        let a = Token::parse(&"a".repeat(40)).unwrap();
        let b = Token::parse(&"b".repeat(40)).unwrap();
        assert!(a.host_label().starts_with("liza-") && a.host_label().ends_with(".localhost"));
        assert_eq!(a.host_label().len(), "liza-.localhost".len() + 10);
        assert_ne!(a.host_label(), b.host_label());
        assert!(!a.host_label().contains(&"a".repeat(10)));
    }

    #[test]
    fn matching_is_exact() {
        let token = Token::parse(&"a".repeat(40)).unwrap();
        assert!(token.matches(&"a".repeat(40)));
        assert!(!token.matches(&"a".repeat(39)));
        assert!(!token.matches(&format!("{}b", "a".repeat(39))));
        assert_ne!(token.csrf(), token.as_str());
    }
}
