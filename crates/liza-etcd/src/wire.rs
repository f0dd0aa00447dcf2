//! The JSON forms of etcd's v3 gateway as etcd 3.4.23 writes them (observed, not assumed):
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

/// A read of one key or a range of keys (`/v3/kv/range`, or a txn's read).
#[derive(Debug, Clone, Default, Serialize)]
pub struct RangeRequest {
    /// The key, or the first key of the range.
    #[serde(with = "b64")]
    pub key: Vec<u8>,
    /// The end of the range, not included (empty: `key` alone).
    #[serde(with = "b64", skip_serializing_if = "is_empty")]
    pub range_end: Vec<u8>,
    /// At most this many keys (0: all).
    #[serde(with = "int", skip_serializing_if = "is_zero")]
    pub limit: i64,
    /// Read as of this revision (0: the newest).
    #[serde(with = "int", skip_serializing_if = "is_zero")]
    pub revision: i64,
    /// Keys without their values.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub keys_only: bool,
    /// Only keys changed at this revision or later (0: all).
    #[serde(with = "int", skip_serializing_if = "is_zero")]
    pub min_mod_revision: i64,
}

/// The answer to a read.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct RangeResponse {
    /// The revision read at.
    #[serde(default)]
    pub header: Header,
    /// The keys found, in key order.
    #[serde(default)]
    pub kvs: Vec<KeyValue>,
    /// More keys in the range than `limit` let through.
    #[serde(default)]
    pub more: bool,
}

/// A write of one key (a txn's put).
#[derive(Debug, Clone, Default, Serialize)]
pub struct PutRequest {
    /// The key.
    #[serde(with = "b64")]
    pub key: Vec<u8>,
    /// Its new value.
    #[serde(with = "b64")]
    pub value: Vec<u8>,
    /// The lease to attach it to (0: none).
    #[serde(with = "int", skip_serializing_if = "is_zero")]
    pub lease: i64,
}

/// A deletion of one key or a range of keys (a txn's delete).
#[derive(Debug, Clone, Default, Serialize)]
pub struct DeleteRangeRequest {
    /// The key, or the first key of the range.
    #[serde(with = "b64")]
    pub key: Vec<u8>,
    /// The end of the range, not included (empty: `key` alone).
    #[serde(with = "b64", skip_serializing_if = "is_empty")]
    pub range_end: Vec<u8>,
}

/// What a txn compares (`target` and `result` are the proto enum names).
#[derive(Debug, Clone, Serialize)]
pub struct Compare {
    /// The key compared, or the first key of the range.
    #[serde(with = "b64")]
    pub key: Vec<u8>,
    /// Compares every key in `[key, range_end)` (etcd ≥ 3.3).
    #[serde(with = "b64", skip_serializing_if = "is_empty")]
    pub range_end: Vec<u8>,
    /// What of the key is compared: `MOD` (its mod revision), `CREATE`, `VERSION`,
    /// `VALUE`, `LEASE`.
    pub target: &'static str,
    /// How the key's value compares to the one given: `EQUAL`, `LESS`, `GREATER`,
    /// `NOT_EQUAL`.
    pub result: &'static str,
    /// The revision to compare with when `target` is `MOD`.
    #[serde(with = "opt_int", skip_serializing_if = "Option::is_none")]
    pub mod_revision: Option<i64>,
    /// The revision to compare with when `target` is `CREATE`.
    #[serde(with = "opt_int", skip_serializing_if = "Option::is_none")]
    pub create_revision: Option<i64>,
    /// The value to compare with when `target` is `VALUE` (a key that does not exist
    /// compares false).
    #[serde(with = "b64", skip_serializing_if = "is_empty")]
    pub value: Vec<u8>,
}

/// `Option<i64>` as a string when present.
mod opt_int {
    use super::*;

    pub(super) fn serialize<S: Serializer>(n: &Option<i64>, s: S) -> Result<S::Ok, S::Error> {
        match n {
            Some(n) => s.serialize_str(&n.to_string()),
            None => s.serialize_none(),
        }
    }
}

/// One operation of a txn's branch.
#[derive(Debug, Clone, Serialize)]
pub enum RequestOp {
    /// A read.
    #[serde(rename = "request_range")]
    Range(RangeRequest),
    /// A write.
    #[serde(rename = "request_put")]
    Put(PutRequest),
    /// A deletion.
    #[serde(rename = "request_delete_range")]
    Delete(DeleteRangeRequest),
}

/// A transaction (`/v3/kv/txn`): if every compare holds, `success` runs, otherwise
/// `failure`, all at one revision.
#[derive(Debug, Clone, Default, Serialize)]
pub struct TxnRequest {
    /// The conditions, all of which must hold.
    pub compare: Vec<Compare>,
    /// What runs when they hold.
    pub success: Vec<RequestOp>,
    /// What runs when one does not.
    pub failure: Vec<RequestOp>,
}

/// The answer to a txn.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct TxnResponse {
    /// The revision after the txn: the one its changes made, if it made any.
    #[serde(default)]
    pub header: Header,
    /// Every compare held: `success` ran (left out, so false, when `failure` ran).
    #[serde(default)]
    pub succeeded: bool,
    /// One answer per operation of the branch that ran, in order.
    #[serde(default)]
    pub responses: Vec<ResponseOp>,
}

/// The answer to one operation of a txn (only reads' answers are kept).
#[derive(Debug, Clone, Default, Deserialize)]
pub struct ResponseOp {
    /// A read's answer; `None` for a write or a deletion.
    pub response_range: Option<RangeResponse>,
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
        // A failed txn (no `succeeded`), with a range response.
        let failed: TxnResponse = serde_json::from_str(
            r#"{"header":{"cluster_id":"324952591200643719","revision":"3","raft_term":"2"},"responses":[{"response_range":{"header":{"revision":"3"},"kvs":[{"key":"cC9oZWFk","create_revision":"2","mod_revision":"3","version":"2","value":"djI="}],"count":"1"}}]}"#,
        )
        .unwrap();
        assert!(!failed.succeeded);
        assert_eq!(failed.header.revision, 3);
        let kv = &failed.responses[0].response_range.as_ref().unwrap().kvs[0];
        assert_eq!(
            (kv.key.as_slice(), kv.value.as_slice()),
            (&b"p/head"[..], &b"v2"[..])
        );
        assert_eq!((kv.create_revision, kv.mod_revision, kv.version), (2, 3, 2));
        // An empty range: no kvs, no count.
        let empty: RangeResponse =
            serde_json::from_str(r#"{"header":{"revision":"6","raft_term":"2"}}"#).unwrap();
        assert!(empty.kvs.is_empty());
        // Watch lines: PUT without a type, DELETE without a value.
        let line: WatchLine = serde_json::from_str(
            r#"{"result":{"header":{"revision":"5"},"events":[{"kv":{"key":"cC9uZXc=","create_revision":"4","mod_revision":"4","version":"1","value":"eA=="}},{"type":"DELETE","kv":{"key":"cC9uZXc=","mod_revision":"5"}}]}}"#,
        )
        .unwrap();
        let events = line.result.unwrap().events;
        assert_eq!(events[0].kind, None);
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
        let txn = TxnRequest {
            compare: vec![Compare {
                key: b"p/head".to_vec(),
                range_end: Vec::new(),
                target: "MOD",
                result: "EQUAL",
                mod_revision: Some(2),
                create_revision: None,
                value: Vec::new(),
            }],
            success: vec![RequestOp::Put(PutRequest {
                key: b"p/head".to_vec(),
                value: b"v".to_vec(),
                lease: 0,
            })],
            failure: vec![],
        };
        assert_eq!(
            serde_json::to_string(&txn).unwrap(),
            r#"{"compare":[{"key":"cC9oZWFk","target":"MOD","result":"EQUAL","mod_revision":"2"}],"success":[{"request_put":{"key":"cC9oZWFk","value":"dg=="}}],"failure":[]}"#
        );
        // A value compare, as etcd 3.4's gateway takes it (observed: `succeeded` when the
        // key holds exactly that value, absent otherwise).
        let by_value = Compare {
            key: b"p/commit".to_vec(),
            range_end: Vec::new(),
            target: "VALUE",
            result: "EQUAL",
            mod_revision: None,
            create_revision: None,
            value: b"abc".to_vec(),
        };
        assert_eq!(
            serde_json::to_string(&by_value).unwrap(),
            r#"{"key":"cC9jb21taXQ=","target":"VALUE","result":"EQUAL","value":"YWJj"}"#
        );
    }
}
