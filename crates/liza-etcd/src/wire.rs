//! The JSON forms of etcd's v3 gateway — leases, compaction, watches; reads and
//! transactions go over gRPC (`proto`) — as etcd 3.4.23 writes them (observed, not assumed):
//! keys and values are base64, 64-bit integers are strings, and a field whose value is
//! zero, false or empty is left out — a failed txn has no `succeeded`, a PUT event no
//! `type`, an empty value no `value`, an empty range no `kvs`. Errors come back with HTTP
//! 400/5xx as `{"error", "message", "code"}` (gRPC codes: 3 invalid argument — an illegal
//! base64 key, a request over 1.5 MiB —, 5 not found, 11 out of range — a compacted
//! revision).

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Bytes as base64 text.
pub mod b64 {
    use super::*;

    /// Writes `bytes` as base64 text.
    pub fn serialize<S: Serializer>(bytes: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&STANDARD.encode(bytes))
    }

    /// Reads base64 text as bytes.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        let text = String::deserialize(d)?;
        STANDARD
            .decode(text.as_bytes())
            .map_err(serde::de::Error::custom)
    }
}

/// A 64-bit integer as a JSON string (the gateway's proto3 mapping); a number is read too.
pub mod int {
    use super::*;

    /// Writes `n` as a JSON string.
    pub fn serialize<S: Serializer>(n: &i64, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&n.to_string())
    }

    /// Reads a JSON string or number as an `i64`.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<i64, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Either {
            Text(String),
            Number(i64),
        }
        match Either::deserialize(d)? {
            Either::Text(t) => t.parse().map_err(serde::de::Error::custom),
            Either::Number(n) => Ok(n),
        }
    }
}

fn is_zero(n: &i64) -> bool {
    *n == 0
}

fn is_empty(b: &[u8]) -> bool {
    b.is_empty()
}

/// The header of every answer.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Header {
    /// The store's revision when the request was served.
    #[serde(default, with = "int")]
    pub revision: i64,
}

/// One key as etcd stores it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct KeyValue {
    /// The key.
    #[serde(with = "b64")]
    pub key: Vec<u8>,
    /// Its value (empty for a keys-only read).
    #[serde(default, with = "b64")]
    pub value: Vec<u8>,
    /// The revision that created the key (since its last deletion).
    #[serde(default, with = "int")]
    pub create_revision: i64,
    /// The revision that last changed it.
    #[serde(default, with = "int")]
    pub mod_revision: i64,
    /// How many times it was written since it was created (1 after the first put).
    #[serde(default, with = "int")]
    pub version: i64,
    /// The lease it is attached to (0: none).
    #[serde(default, with = "int")]
    pub lease: i64,
}

/// A request for a new lease (`/v3/lease/grant`).
#[derive(Debug, Clone, Serialize)]
pub struct LeaseGrantRequest {
    /// How long the lease lasts without renewal, in seconds.
    #[serde(rename = "TTL", with = "int")]
    pub ttl: i64,
}

/// A request about one lease: renew, time to live, revoke.
#[derive(Debug, Clone, Serialize)]
pub struct LeaseIdRequest {
    /// The lease.
    #[serde(rename = "ID", with = "int")]
    pub id: i64,
}

/// The answer about a lease: granted, renewed, or its time to live.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct LeaseResponse {
    /// The lease.
    #[serde(rename = "ID", default, with = "int")]
    pub id: i64,
    /// The seconds it has left (0 or -1: expired, or never existed).
    #[serde(rename = "TTL", default, with = "int")]
    pub ttl: i64,
}

/// The keepalive answer is wrapped like a stream message; an expired lease has no TTL.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct KeepAliveResponse {
    /// The lease renewed.
    #[serde(default)]
    pub result: LeaseResponse,
}

/// A request to drop history (`/v3/kv/compaction`).
#[derive(Debug, Clone, Serialize)]
pub struct CompactionRequest {
    /// The history before this revision is dropped.
    #[serde(with = "int")]
    pub revision: i64,
}

/// What a watch watches, and from when.
#[derive(Debug, Clone, Serialize)]
pub struct WatchCreate {
    /// The key, or the first key of the range.
    #[serde(with = "b64")]
    pub key: Vec<u8>,
    /// The end of the range, not included (empty: `key` alone).
    #[serde(with = "b64", skip_serializing_if = "is_empty")]
    pub range_end: Vec<u8>,
    /// The first revision to deliver (0: changes from now on).
    #[serde(with = "int", skip_serializing_if = "is_zero")]
    pub start_revision: i64,
}

/// The request that opens a watch stream (`/v3/watch`).
#[derive(Debug, Clone, Serialize)]
pub struct WatchRequest {
    /// The watch to create.
    pub create_request: WatchCreate,
}

/// One line of the watch stream: a result or an error.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct WatchLine {
    /// What the watch delivers.
    pub result: Option<WatchResponse>,
    /// Why the stream failed.
    pub error: Option<ErrorBody>,
}

/// One message of a watch stream.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct WatchResponse {
    /// The store's revision when the message was sent.
    #[serde(default)]
    pub header: Header,
    /// The first message: the watch exists.
    #[serde(default)]
    pub created: bool,
    /// The watch has ended: nothing more comes on this stream.
    #[serde(default)]
    pub canceled: bool,
    /// Set when the watch was cancelled because its start revision was compacted away:
    /// the oldest revision etcd still keeps.
    #[serde(default, with = "int")]
    pub compact_revision: i64,
    /// The changes, in revision order.
    #[serde(default)]
    pub events: Vec<WireEvent>,
}

/// One change in a watch message.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct WireEvent {
    /// `DELETE` for a deletion; left out for a PUT.
    #[serde(rename = "type", default)]
    pub kind: Option<String>,
    /// The key after a put; after a deletion, the key and the deleting revision alone.
    pub kv: KeyValue,
}

/// An error answer.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct ErrorBody {
    /// The gRPC status code.
    #[serde(default)]
    pub code: i64,
    /// What went wrong.
    #[serde(default)]
    pub message: String,
    /// The same text (etcd 3.4.23 writes both); the client reads it when `message` is empty.
    #[serde(default)]
    pub error: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_read_as_etcd_3_4_23_writes_them() {
        // Watch lines: PUT without a type, DELETE without a value.
        let line: WatchLine = serde_json::from_str(
            r#"{"result":{"header":{"revision":"5"},"events":[{"kv":{"key":"cC9uZXc=","create_revision":"4","mod_revision":"4","version":"1","value":"eA=="}},{"type":"DELETE","kv":{"key":"cC9uZXc=","mod_revision":"5"}}]}}"#,
        )
        .unwrap();
        let result = line.result.unwrap();
        assert_eq!(result.header.revision, 5);
        let events = result.events;
        assert_eq!(events[0].kind, None);
        assert_eq!(
            (events[0].kv.key.as_slice(), events[0].kv.value.as_slice()),
            (&b"p/new"[..], &b"x"[..])
        );
        assert_eq!(
            (
                events[0].kv.create_revision,
                events[0].kv.mod_revision,
                events[0].kv.version
            ),
            (4, 4, 1)
        );
        assert_eq!(events[1].kind.as_deref(), Some("DELETE"));
        assert!(events[1].kv.value.is_empty());
        let error: ErrorBody = serde_json::from_str(
            r#"{"error":"illegal base64 data at input byte 0","message":"illegal base64 data at input byte 0","code":3}"#,
        )
        .unwrap();
        assert_eq!(error.code, 3);
    }

    #[test]
    fn requests_write_integers_as_strings_and_leave_out_zeros() {
        let watch = WatchRequest {
            create_request: WatchCreate {
                key: b"p/".to_vec(),
                range_end: Vec::new(),
                start_revision: 12,
            },
        };
        assert_eq!(
            serde_json::to_string(&watch).unwrap(),
            r#"{"create_request":{"key":"cC8=","start_revision":"12"}}"#
        );
        assert_eq!(
            serde_json::to_string(&LeaseIdRequest { id: 7 }).unwrap(),
            r#"{"ID":"7"}"#
        );
    }
}
