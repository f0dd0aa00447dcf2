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

    pub fn serialize<S: Serializer>(bytes: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&STANDARD.encode(bytes))
    }

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

    pub fn serialize<S: Serializer>(n: &i64, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&n.to_string())
    }

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

#[derive(Debug, Clone, Default, Deserialize)]
pub struct Header {
    #[serde(default, with = "int")]
    pub revision: i64,
}

/// One key as etcd stores it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct KeyValue {
    #[serde(with = "b64")]
    pub key: Vec<u8>,
    #[serde(default, with = "b64")]
    pub value: Vec<u8>,
    #[serde(default, with = "int")]
    pub create_revision: i64,
    #[serde(default, with = "int")]
    pub mod_revision: i64,
    #[serde(default, with = "int")]
    pub version: i64,
    #[serde(default, with = "int")]
    pub lease: i64,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct RangeRequest {
    #[serde(with = "b64")]
    pub key: Vec<u8>,
    #[serde(with = "b64", skip_serializing_if = "is_empty")]
    pub range_end: Vec<u8>,
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

#[derive(Debug, Clone, Default, Deserialize)]
pub struct RangeResponse {
    #[serde(default)]
    pub header: Header,
    #[serde(default)]
    pub kvs: Vec<KeyValue>,
    #[serde(default)]
    pub more: bool,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct PutRequest {
    #[serde(with = "b64")]
    pub key: Vec<u8>,
    #[serde(with = "b64")]
    pub value: Vec<u8>,
    #[serde(with = "int", skip_serializing_if = "is_zero")]
    pub lease: i64,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct DeleteRangeRequest {
    #[serde(with = "b64")]
    pub key: Vec<u8>,
    #[serde(with = "b64", skip_serializing_if = "is_empty")]
    pub range_end: Vec<u8>,
}

/// What a txn compares (`target` and `result` are the proto enum names).
#[derive(Debug, Clone, Serialize)]
pub struct Compare {
    #[serde(with = "b64")]
    pub key: Vec<u8>,
    /// Compares every key in `[key, range_end)` (etcd ≥ 3.3).
    #[serde(with = "b64", skip_serializing_if = "is_empty")]
    pub range_end: Vec<u8>,
    pub target: &'static str,
    pub result: &'static str,
    #[serde(with = "opt_int", skip_serializing_if = "Option::is_none")]
    pub mod_revision: Option<i64>,
    #[serde(with = "opt_int", skip_serializing_if = "Option::is_none")]
    pub create_revision: Option<i64>,
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

#[derive(Debug, Clone, Serialize)]
pub enum RequestOp {
    #[serde(rename = "request_range")]
    Range(RangeRequest),
    #[serde(rename = "request_put")]
    Put(PutRequest),
    #[serde(rename = "request_delete_range")]
    Delete(DeleteRangeRequest),
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct TxnRequest {
    pub compare: Vec<Compare>,
    pub success: Vec<RequestOp>,
    pub failure: Vec<RequestOp>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct TxnResponse {
    #[serde(default)]
    pub header: Header,
    #[serde(default)]
    pub succeeded: bool,
    #[serde(default)]
    pub responses: Vec<ResponseOp>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct ResponseOp {
    pub response_range: Option<RangeResponse>,
}

#[derive(Debug, Clone, Serialize)]
pub struct LeaseGrantRequest {
    #[serde(rename = "TTL", with = "int")]
    pub ttl: i64,
}

#[derive(Debug, Clone, Serialize)]
pub struct LeaseIdRequest {
    #[serde(rename = "ID", with = "int")]
    pub id: i64,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct LeaseResponse {
    #[serde(rename = "ID", default, with = "int")]
    pub id: i64,
    #[serde(rename = "TTL", default, with = "int")]
    pub ttl: i64,
}

/// The keepalive answer is wrapped like a stream message; an expired lease has no TTL.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct KeepAliveResponse {
    #[serde(default)]
    pub result: LeaseResponse,
}

#[derive(Debug, Clone, Serialize)]
pub struct CompactionRequest {
    #[serde(with = "int")]
    pub revision: i64,
}

#[derive(Debug, Clone, Serialize)]
pub struct WatchCreate {
    #[serde(with = "b64")]
    pub key: Vec<u8>,
    #[serde(with = "b64", skip_serializing_if = "is_empty")]
    pub range_end: Vec<u8>,
    #[serde(with = "int", skip_serializing_if = "is_zero")]
    pub start_revision: i64,
}

#[derive(Debug, Clone, Serialize)]
pub struct WatchRequest {
    pub create_request: WatchCreate,
}

/// One line of the watch stream: a result or an error.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct WatchLine {
    pub result: Option<WatchResponse>,
    pub error: Option<ErrorBody>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct WatchResponse {
    #[serde(default)]
    pub header: Header,
    #[serde(default)]
    pub created: bool,
    #[serde(default)]
    pub canceled: bool,
    #[serde(default, with = "int")]
    pub compact_revision: i64,
    #[serde(default)]
    pub events: Vec<WireEvent>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct WireEvent {
    /// Left out for a PUT.
    #[serde(rename = "type", default)]
    pub kind: Option<String>,
    pub kv: KeyValue,
}

/// An error answer.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct ErrorBody {
    #[serde(default)]
    pub code: i64,
    #[serde(default)]
    pub message: String,
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
    }
}
