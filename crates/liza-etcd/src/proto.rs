//! etcd's KV service in protocol buffers, the messages liza sends and reads, encoded by
//! hand from etcd's `rpc.proto` and `kv.proto` (field numbers as etcd 3.0–3.6 define
//! them): no protoc and no generated code in the build. Reads and writes go to etcd over
//! gRPC in this form (`grpc`), not through the JSON gateway: decoding the gateway's JSON
//! and base64 was most of etcd's work per transaction (specs/shared-store.md *The client*).
//!
//! proto3 leaves out a field whose value is zero, false or empty, and so does this
//! encoder — except a `oneof` member, which is sent whenever it is set (a compare with
//! mod revision 0 means "the key does not exist"). The decoder skips fields it does not
//! know, as protobuf readers must.

use crate::wire::KeyValue;

/// Why an answer does not read as the message expected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}: {problem}")]
pub struct ProtoError {
    message: &'static str,
    problem: &'static str,
}

/// A read of one key or a range of keys (`KV/Range`, or a txn's read).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RangeRequest {
    /// The key, or the first key of the range.
    pub key: Vec<u8>,
    /// The end of the range, not included (empty: `key` alone).
    pub range_end: Vec<u8>,
    /// At most this many keys (0: all).
    pub limit: i64,
    /// Read as of this revision (0: the newest).
    pub revision: i64,
    /// Keys without their values.
    pub keys_only: bool,
    /// Only keys changed at this revision or later (0: all).
    pub min_mod_revision: i64,
}

/// A write of one key (a txn's put).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PutRequest {
    /// The key.
    pub key: Vec<u8>,
    /// Its new value.
    pub value: Vec<u8>,
    /// The lease to attach it to (0: none).
    pub lease: i64,
}

/// A deletion of one key or a range of keys (a txn's delete).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeleteRangeRequest {
    /// The key, or the first key of the range.
    pub key: Vec<u8>,
    /// The end of the range, not included (empty: `key` alone).
    pub range_end: Vec<u8>,
}

/// How a key compares to what a txn gives (`Compare.CompareResult`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompareResult {
    /// Equal to it.
    Equal = 0,
    /// Less than it.
    Less = 2,
}

/// What a compare is about: the key's mod revision or its value (the members of
/// `Compare.target_union` liza uses).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CompareTarget {
    /// The revision that last changed the key (0: it does not exist).
    Mod(i64),
    /// Its value (a key that does not exist compares false).
    Value(Vec<u8>),
}

/// One condition of a txn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Compare {
    /// The key compared, or the first key of the range.
    pub key: Vec<u8>,
    /// Compares every key in `[key, range_end)` (etcd ≥ 3.3); empty: `key` alone.
    pub range_end: Vec<u8>,
    /// What is compared, with what.
    pub target: CompareTarget,
    /// How it must compare.
    pub result: CompareResult,
}

/// One operation of a txn's branch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RequestOp {
    /// A read.
    Range(RangeRequest),
    /// A write.
    Put(PutRequest),
    /// A deletion.
    Delete(DeleteRangeRequest),
}

/// A transaction (`KV/Txn`): if every compare holds, `success` runs, otherwise
/// `failure`, all at one revision.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TxnRequest {
    /// The conditions, all of which must hold.
    pub compare: Vec<Compare>,
    /// What runs when they hold.
    pub success: Vec<RequestOp>,
    /// What runs when one does not.
    pub failure: Vec<RequestOp>,
}

/// The answer to a read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RangeResponse {
    /// The revision read at.
    pub revision: i64,
    /// The keys found, in key order.
    pub kvs: Vec<KeyValue>,
    /// More keys in the range than `limit` let through.
    pub more: bool,
}

/// The answer to a txn.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TxnResponse {
    /// The revision after the txn: the one its changes made, if it made any.
    pub revision: i64,
    /// Every compare held: `success` ran.
    pub succeeded: bool,
    /// One answer per operation of the branch that ran, in order: a read's answer, or
    /// `None` for a write or a deletion.
    pub responses: Vec<Option<RangeResponse>>,
}

// Wire types (protobuf encoding).
const VARINT: u8 = 0;
const FIXED64: u8 = 1;
const LEN: u8 = 2;
const FIXED32: u8 = 5;

/// A message being written.
#[derive(Default)]
struct Writer(Vec<u8>);

impl Writer {
    fn varint(&mut self, mut n: u64) {
        while n >= 0x80 {
            self.0.push((n as u8) | 0x80);
            n >>= 7;
        }
        self.0.push(n as u8);
    }

    fn tag(&mut self, field: u32, wire: u8) {
        self.varint(u64::from(field) << 3 | u64::from(wire));
    }

    /// An `int64`, `enum` or `bool` field: negative numbers are their two's complement.
    fn int(&mut self, field: u32, n: i64) {
        if n != 0 {
            self.int_always(field, n);
        }
    }

    /// A `oneof` member: sent even when zero.
    fn int_always(&mut self, field: u32, n: i64) {
        self.tag(field, VARINT);
        self.varint(n as u64);
    }

    fn bytes(&mut self, field: u32, bytes: &[u8]) {
        if !bytes.is_empty() {
            self.bytes_always(field, bytes);
        }
    }

    fn bytes_always(&mut self, field: u32, bytes: &[u8]) {
        self.tag(field, LEN);
        self.varint(bytes.len() as u64);
        self.0.extend_from_slice(bytes);
    }

    /// A nested message, written by `write` (always sent: an empty message is a value).
    fn message(&mut self, field: u32, write: impl FnOnce(&mut Writer)) {
        let mut nested = Writer::default();
        write(&mut nested);
        self.bytes_always(field, &nested.0);
    }
}

impl RangeRequest {
    fn write(&self, w: &mut Writer) {
        w.bytes(1, &self.key);
        w.bytes(2, &self.range_end);
        w.int(3, self.limit);
        w.int(4, self.revision);
        w.int(8, i64::from(self.keys_only));
        w.int(10, self.min_mod_revision);
    }

    /// The message's bytes.
    pub fn encode(&self) -> Vec<u8> {
        let mut w = Writer::default();
        self.write(&mut w);
        w.0
    }
}

impl RequestOp {
    fn write(&self, w: &mut Writer) {
        match self {
            RequestOp::Range(r) => w.message(1, |w| r.write(w)),
            RequestOp::Put(p) => w.message(2, |w| {
                w.bytes(1, &p.key);
                w.bytes(2, &p.value);
                w.int(3, p.lease);
            }),
            RequestOp::Delete(d) => w.message(3, |w| {
                w.bytes(1, &d.key);
                w.bytes(2, &d.range_end);
            }),
        }
    }
}

impl Compare {
    fn write(&self, w: &mut Writer) {
        w.int(1, self.result as i64);
        let target = match self.target {
            CompareTarget::Mod(_) => 2,
            CompareTarget::Value(_) => 3,
        };
        w.int(2, target);
        w.bytes(3, &self.key);
        match &self.target {
            CompareTarget::Mod(revision) => w.int_always(6, *revision),
            CompareTarget::Value(value) => w.bytes_always(7, value),
        }
        w.bytes(64, &self.range_end);
    }
}

impl TxnRequest {
    /// The message's bytes.
    pub fn encode(&self) -> Vec<u8> {
        let mut w = Writer::default();
        for c in &self.compare {
            w.message(1, |w| c.write(w));
        }
        for op in &self.success {
            w.message(2, |w| op.write(w));
        }
        for op in &self.failure {
            w.message(3, |w| op.write(w));
        }
        w.0
    }
}

/// One field of a message being read.
enum Value<'a> {
    Int(u64),
    Bytes(&'a [u8]),
}

/// A message being read, field by field.
struct Reader<'a> {
    rest: &'a [u8],
    message: &'static str,
}

impl<'a> Reader<'a> {
    fn new(bytes: &'a [u8], message: &'static str) -> Self {
        Reader {
            rest: bytes,
            message,
        }
    }

    fn fail<T>(&self, problem: &'static str) -> Result<T, ProtoError> {
        Err(ProtoError {
            message: self.message,
            problem,
        })
    }

    fn varint(&mut self) -> Result<u64, ProtoError> {
        let mut n = 0u64;
        for shift in (0..64).step_by(7) {
            let Some((&byte, rest)) = self.rest.split_first() else {
                return self.fail("a number is cut short");
            };
            self.rest = rest;
            n |= u64::from(byte & 0x7f) << shift;
            if byte < 0x80 {
                return Ok(n);
            }
        }
        self.fail("a number is longer than ten bytes")
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], ProtoError> {
        if self.rest.len() < n {
            return self.fail("a field is cut short");
        }
        let (taken, rest) = self.rest.split_at(n);
        self.rest = rest;
        Ok(taken)
    }

    /// The next field the caller reads (its number and value), skipping the others'
    /// encodings as they come; `None` at the end.
    fn next(&mut self) -> Result<Option<(u64, Value<'a>)>, ProtoError> {
        loop {
            if self.rest.is_empty() {
                return Ok(None);
            }
            let tag = self.varint()?;
            let field = tag >> 3;
            let value = match (tag & 7) as u8 {
                VARINT => Value::Int(self.varint()?),
                LEN => {
                    let len = self.varint()?;
                    let len = usize::try_from(len).unwrap_or(usize::MAX);
                    Value::Bytes(self.take(len)?)
                }
                // No field liza reads is fixed-size: skipped, however many come in a row.
                FIXED64 => {
                    self.take(8)?;
                    continue;
                }
                FIXED32 => {
                    self.take(4)?;
                    continue;
                }
                _ => return self.fail("a field has a wire type protobuf does not define"),
            };
            return Ok(Some((field, value)));
        }
    }

    /// Every field, to `visit` (with this reader, for its errors).
    fn each(
        mut self,
        mut visit: impl FnMut(u64, Value<'a>) -> Result<(), ProtoError>,
    ) -> Result<(), ProtoError> {
        while let Some((field, value)) = self.next()? {
            visit(field, value)?;
        }
        Ok(())
    }
}

impl<'a> Value<'a> {
    /// The number a field of `message` holds; an error when it came as bytes (etcd
    /// sends its numbers as varints: anything else is not an answer of etcd's).
    fn int(&self, message: &'static str) -> Result<i64, ProtoError> {
        match self {
            Value::Int(n) => Ok(*n as i64),
            Value::Bytes(_) => Err(ProtoError {
                message,
                problem: "a number came as bytes",
            }),
        }
    }

    /// The bytes (a string, bytes or a message) a field of `message` holds; an error
    /// when it came as a number.
    fn bytes(&self, message: &'static str) -> Result<&'a [u8], ProtoError> {
        match self {
            Value::Bytes(b) => Ok(b),
            Value::Int(_) => Err(ProtoError {
                message,
                problem: "bytes came as a number",
            }),
        }
    }
}

/// `ResponseHeader.revision`.
fn header_revision(bytes: &[u8]) -> Result<i64, ProtoError> {
    let mut revision = 0;
    Reader::new(bytes, "ResponseHeader").each(|field, value| {
        if field == 3 {
            revision = value.int("ResponseHeader")?;
        }
        Ok(())
    })?;
    Ok(revision)
}

fn key_value(bytes: &[u8]) -> Result<KeyValue, ProtoError> {
    let mut kv = KeyValue::default();
    Reader::new(bytes, "KeyValue").each(|field, value| {
        match field {
            1 => kv.key = value.bytes("KeyValue")?.to_vec(),
            2 => kv.create_revision = value.int("KeyValue")?,
            3 => kv.mod_revision = value.int("KeyValue")?,
            4 => kv.version = value.int("KeyValue")?,
            5 => kv.value = value.bytes("KeyValue")?.to_vec(),
            6 => kv.lease = value.int("KeyValue")?,
            _ => {}
        }
        Ok(())
    })?;
    Ok(kv)
}

impl RangeResponse {
    /// The message read from `bytes`.
    pub fn decode(bytes: &[u8]) -> Result<Self, ProtoError> {
        let mut out = RangeResponse::default();
        Reader::new(bytes, "RangeResponse").each(|field, value| {
            match field {
                1 => out.revision = header_revision(value.bytes("RangeResponse")?)?,
                2 => out.kvs.push(key_value(value.bytes("RangeResponse")?)?),
                3 => out.more = value.int("RangeResponse")? != 0,
                _ => {}
            }
            Ok(())
        })?;
        Ok(out)
    }
}

impl TxnResponse {
    /// The message read from `bytes`.
    pub fn decode(bytes: &[u8]) -> Result<Self, ProtoError> {
        let mut out = TxnResponse::default();
        Reader::new(bytes, "TxnResponse").each(|field, value| {
            match field {
                1 => out.revision = header_revision(value.bytes("TxnResponse")?)?,
                2 => out.succeeded = value.int("TxnResponse")? != 0,
                3 => {
                    let mut range = None;
                    Reader::new(value.bytes("TxnResponse")?, "ResponseOp").each(
                        |field, value| {
                            if field == 1 {
                                range = Some(RangeResponse::decode(value.bytes("ResponseOp")?)?);
                            }
                            Ok(())
                        },
                    )?;
                    out.responses.push(range);
                }
                _ => {}
            }
            Ok(())
        })?;
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bytes written as protobuf's text of them: each field's tag, then its value.
    fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    #[test]
    fn a_txn_encodes_field_by_field_as_rpc_proto_numbers_them() {
        let txn = TxnRequest {
            compare: vec![
                Compare {
                    key: b"p/head".to_vec(),
                    range_end: Vec::new(),
                    target: CompareTarget::Mod(2),
                    result: CompareResult::Equal,
                },
                // Mod revision 0 ("the key does not exist") is still sent: it is a oneof.
                Compare {
                    key: b"k".to_vec(),
                    range_end: b"l".to_vec(),
                    target: CompareTarget::Mod(0),
                    result: CompareResult::Less,
                },
            ],
            success: vec![RequestOp::Put(PutRequest {
                key: b"p/head".to_vec(),
                value: b"v".to_vec(),
                lease: 0,
            })],
            failure: vec![RequestOp::Range(RangeRequest {
                key: b"k".to_vec(),
                min_mod_revision: 300,
                ..RangeRequest::default()
            })],
        };
        assert_eq!(
            hex(&txn.encode()),
            concat!(
                // compare 1: target MOD (2), key, mod_revision (6) 2; result EQUAL left out
                "0a0c",
                "1002",
                "1a06702f68656164",
                "3002",
                // compare 2: result LESS (2), target MOD, key, mod_revision 0, range_end (64)
                "0a0d",
                "0802",
                "1002",
                "1a016b",
                "3000",
                "8204016c",
                // success: request_put (2) { key, value }
                "120d",
                "120b",
                "0a06702f68656164",
                "120176",
                // failure: request_range (1) { key, min_mod_revision (10) 300 }
                "1a08",
                "0a06",
                "0a016b",
                "50ac02",
            )
        );
    }

    #[test]
    fn a_value_compare_and_a_negative_number_encode_as_protobuf_says() {
        let compare = Compare {
            key: b"c".to_vec(),
            range_end: Vec::new(),
            target: CompareTarget::Value(b"abc".to_vec()),
            result: CompareResult::Equal,
        };
        let mut w = Writer::default();
        compare.write(&mut w);
        assert_eq!(hex(&w.0), "1003".to_owned() + "1a0163" + "3a03616263");
        let mut w = Writer::default();
        w.int(3, -1);
        assert_eq!(hex(&w.0), "18ffffffffffffffffff01");
    }

    #[test]
    fn answers_decode_skipping_fields_liza_does_not_read() {
        // A txn that failed (no `succeeded`), its failure branch one read of one key;
        // the header with cluster id, member id and raft term around the revision.
        let kv = [
            &b"\x0a\x06p/head"[..], // key
            b"\x10\x02",            // create_revision 2
            b"\x18\x03",            // mod_revision 3
            b"\x20\x02",            // version 2
            b"\x2a\x02v2",          // value
        ]
        .concat();
        let header = b"\x08\x87\x01\x10\x01\x18\x03\x20\x02\x29\0\0\0\0\0\0\0\0".to_vec();
        let range = [
            &[0x0a, header.len() as u8][..],
            &header,
            &[0x12, kv.len() as u8],
            &kv,
            b"\x20\x01", // count 1
        ]
        .concat();
        let op = [&[0x0a, range.len() as u8][..], &range].concat();
        let txn = [
            &[0x0a, header.len() as u8][..],
            &header,
            &[0x1a, op.len() as u8],
            &op,
        ]
        .concat();
        let answer = TxnResponse::decode(&txn).unwrap();
        assert!(!answer.succeeded);
        assert_eq!(answer.revision, 3);
        let read = answer.responses[0].as_ref().unwrap();
        assert_eq!(read.revision, 3);
        let kv = &read.kvs[0];
        assert_eq!(
            (kv.key.as_slice(), kv.value.as_slice()),
            (&b"p/head"[..], &b"v2"[..])
        );
        assert_eq!((kv.create_revision, kv.mod_revision, kv.version), (2, 3, 2));
        // A put's answer is not a read.
        let put = [&b"\x1a\x02"[..], b"\x12\x00", b"\x10\x01"].concat();
        let answer = TxnResponse::decode(&put).unwrap();
        assert!(answer.succeeded);
        assert_eq!(answer.responses, vec![None]);
    }

    #[test]
    fn a_cut_answer_is_an_error_naming_the_message_never_a_panic() {
        let err = RangeResponse::decode(b"\x12\x04\x0a\x06p/").unwrap_err();
        assert_eq!(err.to_string(), "KeyValue: a field is cut short");
        let err = RangeResponse::decode(b"\x18").unwrap_err();
        assert!(err.to_string().contains("cut short"), "{err}");
        let err = RangeResponse::decode(b"\x1f").unwrap_err();
        assert!(err.to_string().contains("wire type"), "{err}");
        let err = RangeResponse::decode(
            &[0x18; 1]
                .iter()
                .chain(&[0xff; 11])
                .copied()
                .collect::<Vec<_>>(),
        )
        .unwrap_err();
        assert!(err.to_string().contains("ten bytes"), "{err}");
    }

    #[test]
    fn a_field_of_the_wrong_wire_type_is_an_error_not_a_zero() {
        // `more` (field 3, a bool) sent as bytes, a key (field 1) sent as a number.
        let err = RangeResponse::decode(b"\x1a\x01\x01").unwrap_err();
        assert_eq!(err.to_string(), "RangeResponse: a number came as bytes");
        let err = RangeResponse::decode(b"\x12\x02\x08\x05").unwrap_err();
        assert_eq!(err.to_string(), "KeyValue: bytes came as a number");
        let err = TxnResponse::decode(b"\x0a\x02\x1a\x00").unwrap_err();
        assert_eq!(err.to_string(), "ResponseHeader: a number came as bytes");
    }

    #[test]
    fn fixed_size_fields_in_any_number_are_skipped_without_recursion() {
        // 200,000 fixed32 fields (field 15) then `more`: a reader that recursed once
        // per skipped field would run out of stack on a test thread.
        let mut answer = Vec::with_capacity(1_000_010);
        for _ in 0..200_000 {
            answer.extend_from_slice(b"\x7d\0\0\0\0");
        }
        answer.extend_from_slice(b"\x18\x01");
        assert!(RangeResponse::decode(&answer).unwrap().more);
    }
}
