//! The address of a blackboard kept in etcd (specs/shared-store.md *The store address*):
//! `etcd://HOST:PORT[,HOST:PORT…]/PREFIX`, checked before any of it reaches a request or a
//! key.

use std::fmt;
use std::str::FromStr;

const SCHEME: &str = "etcd://";
const EXAMPLE: &str = "etcd://127.0.0.1:2379/my-project";

/// Where a project's blackboard lives in etcd.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreAddress {
    /// `host:port` of each member, in the order given.
    pub endpoints: Vec<String>,
    /// The project's key prefix, without a trailing `/`.
    pub prefix: String,
}

/// A store address that does not parse: what is wrong in it, shown with the address and
/// the form to write instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{problem} in the store address `{shown}`; write it as {EXAMPLE} (members separated by commas)"
)]
pub struct AddressError {
    problem: AddressProblem,
    /// The address with control characters made visible.
    shown: String,
}

impl AddressError {
    /// What is wrong in it.
    pub fn problem(&self) -> &AddressProblem {
        &self.problem
    }
}

/// What is wrong in a store address.
#[expect(missing_docs, reason = "each variant's message is its documentation")]
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AddressProblem {
    #[error("no `etcd://` at the start")]
    NoScheme,
    #[error("no `/PREFIX` after the members")]
    NoPrefix,
    #[error("a user or password (etcd authentication is not supported)")]
    Credentials,
    #[error("member `{}` has no `:PORT`", .0.escape_debug())]
    NoPort(String),
    #[error("`{}` is not a port (1–65535)", .0.escape_debug())]
    BadPort(String),
    #[error("`{}` is not a host name or address", .0.escape_debug())]
    BadHost(String),
    #[error("the PREFIX is empty")]
    EmptyPrefix,
    #[error("PREFIX segment `{0}` is a name liza uses for its own keys ({reserved})", reserved = RESERVED.join(", "))]
    ReservedSegment(&'static str),
    #[error(
        "PREFIX segment `{}` is not made of a-z, 0-9, `.`, `_`, `-` (starting with a letter or digit)",
        .0.escape_debug()
    )]
    BadSegment(String),
}

impl StoreAddress {
    /// The key `rest` under the project's prefix.
    pub fn key(&self, rest: &str) -> Vec<u8> {
        format!("{}/{rest}", self.prefix).into_bytes()
    }
}

impl FromStr for StoreAddress {
    type Err = AddressError;

    fn from_str(text: &str) -> Result<StoreAddress, AddressError> {
        let fail = |problem: AddressProblem| AddressError {
            problem,
            shown: text.escape_debug().to_string(),
        };
        let rest = text
            .strip_prefix(SCHEME)
            .ok_or_else(|| fail(AddressProblem::NoScheme))?;
        let (members, prefix) = rest
            .split_once('/')
            .ok_or_else(|| fail(AddressProblem::NoPrefix))?;
        if members.contains('@') {
            return Err(fail(AddressProblem::Credentials));
        }
        let endpoints = members
            .split(',')
            .map(|member| endpoint(member).map_err(&fail))
            .collect::<Result<Vec<_>, _>>()?;
        check_prefix(prefix).map_err(&fail)?;
        Ok(StoreAddress {
            endpoints,
            prefix: prefix.to_string(),
        })
    }
}

impl fmt::Display for StoreAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{SCHEME}{}/{}", self.endpoints.join(","), self.prefix)
    }
}

/// `HOST:PORT`: a host name, an IPv4 address or a bracketed IPv6 address, and a port.
fn endpoint(member: &str) -> Result<String, AddressProblem> {
    let (host, port) = member
        .rsplit_once(':')
        .ok_or_else(|| AddressProblem::NoPort(member.to_owned()))?;
    let port_ok = !port.is_empty()
        && port.bytes().all(|b| b.is_ascii_digit())
        && port.parse::<u16>().is_ok_and(|p| p > 0);
    if !port_ok {
        return Err(AddressProblem::BadPort(port.to_owned()));
    }
    let host_ok = match host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        Some(v6) => v6.parse::<std::net::Ipv6Addr>().is_ok(),
        // A name ending in a number is an IPv4 address, in full dotted form (URL parsers
        // read `10.1` or `0x7f.1` as other addresses than a person means).
        None if host
            .rsplit('.')
            .next()
            .is_some_and(|last| !last.is_empty() && last.bytes().all(|b| b.is_ascii_digit())) =>
        {
            host.parse::<std::net::Ipv4Addr>().is_ok()
        }
        None => {
            !host.is_empty()
                && host.len() <= 253
                && host.split('.').all(|label| {
                    !label.is_empty()
                        && !label.starts_with('-')
                        && label
                            .bytes()
                            .all(|b| b.is_ascii_alphanumeric() || b == b'-')
                })
        }
    };
    if !host_ok {
        return Err(AddressProblem::BadHost(host.to_owned()));
    }
    Ok(member.to_string())
}

/// The names the key layout uses under a project's prefix (the store's
/// `store::etcd::layout`, in `liza-store`): a project whose prefix went through one of them
/// would share keys with the project above it. (`liza-floors` holds, at the root of the
/// etcd, how far each project lets history be compacted.)
// `delivered` (where watchers claim an alarm's delivery) is not among them: projects made
// before it existed may have it in their prefix, and its keys are hex, which no name of the
// layout is.
const RESERVED: [&str; 10] = [
    "head", "task", "note", "log", "live", "control", "archive", "doc", "alarm", FLOORS,
];

/// The root namespace of the compaction floors (see the store's `store::etcd`, in
/// `liza-store`).
pub const FLOORS: &str = "liza-floors";

/// One or more `/`-separated segments of `[a-z0-9][a-z0-9._-]*`, none of them a name the
/// key layout uses.
fn check_prefix(prefix: &str) -> Result<(), AddressProblem> {
    if prefix.is_empty() {
        return Err(AddressProblem::EmptyPrefix);
    }
    if let Some(reserved) = prefix
        .split('/')
        .find_map(|s| RESERVED.iter().find(|r| **r == s).copied())
    {
        return Err(AddressProblem::ReservedSegment(reserved));
    }
    for segment in prefix.split('/') {
        let ok = segment
            .bytes()
            .next()
            .is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
            && segment
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"._-".contains(&b));
        if !ok {
            return Err(AddressProblem::BadSegment(segment.to_owned()));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_read_and_print_back() {
        let a: StoreAddress = "etcd://10.0.0.5:2379,etcd-b.lan:2379,[::1]:2379/team/liza-1"
            .parse()
            .unwrap();
        assert_eq!(
            a.endpoints,
            ["10.0.0.5:2379", "etcd-b.lan:2379", "[::1]:2379"]
        );
        assert_eq!(a.prefix, "team/liza-1");
        assert_eq!(a.key("head"), b"team/liza-1/head");
        assert_eq!(
            a.to_string(),
            "etcd://10.0.0.5:2379,etcd-b.lan:2379,[::1]:2379/team/liza-1"
        );
        assert_eq!(a.to_string().parse::<StoreAddress>().unwrap(), a);
    }

    #[test]
    fn bad_addresses_say_what_is_wrong_and_show_the_right_form() {
        for (text, problem) in [
            ("http://127.0.0.1:2379/p", "no `etcd://`"),
            ("etcd://127.0.0.1:2379", "no `/PREFIX`"),
            ("etcd://127.0.0.1:2379/", "PREFIX is empty"),
            ("etcd://127.0.0.1/p", "no `:PORT`"),
            ("etcd://127.0.0.1:0/p", "not a port"),
            ("etcd://127.0.0.1:70000/p", "not a port"),
            ("etcd://127.0.0.1:+80/p", "not a port"),
            ("etcd://:2379/p", "not a host"),
            ("etcd://a b:2379/p", "not a host"),
            ("etcd://-x:2379/p", "not a host"),
            ("etcd://[nope]:2379/p", "not a host"),
            ("etcd://h:1,,h:2/p", "no `:PORT`"),
            ("etcd://user:pw@h:2379/p", "authentication"),
            ("etcd://h:2379/../p", "PREFIX segment `..`"),
            ("etcd://h:2379/p//q", "PREFIX segment ``"),
            ("etcd://h:2379/p/", "PREFIX segment ``"),
            ("etcd://h:2379/Team", "PREFIX segment `Team`"),
            (
                "etcd://h:2379/team/task",
                "PREFIX segment `task` is a name liza uses",
            ),
            (
                "etcd://h:2379/head",
                "PREFIX segment `head` is a name liza uses",
            ),
            ("etcd://10.1:2379/p", "not a host"),
            ("etcd://0x7f.1:2379/p", "not a host"),
            ("etcd://4294967295:2379/p", "not a host"),
            ("etcd://999.1.1.1:2379/p", "not a host"),
            ("etcd://h:2379/p\u{1b}[2J", "PREFIX segment `p\\u{1b}[2J`"),
        ] {
            let err = text.parse::<StoreAddress>().unwrap_err().to_string();
            assert!(err.contains(problem), "{text}: {err}");
            assert!(err.contains(EXAMPLE), "{text}: {err}");
            assert!(!err.contains('\u{1b}'), "{text}: {err}");
        }
    }
}
