//! Delivery of stored media at `/m/{object}/{expires}/{signature}/{file}` (DECISIONS §7):
//! the signature is the permission (minted only for readers of the object), so these answers
//! need no token or cookie and work in a `<video src>`, a player's fetch, or curl.
//! Range (206/416), `ETag`, `Last-Modified`, `If-None-Match` (304), `If-Range`, CORS.
//!
//! `{file}` is the rest of the path, `/` included: derived files live in folders
//! (`hls/720p.m3u8`), and the relative URIs inside a playlist (`720p.m4s`) resolve under the
//! same signed prefix, which the signature covers whatever the file. Which paths exist is the
//! use case's to say (only what the object's media lists: anything else is a 404).

use actix_web::http::{Method, StatusCode, header};
use actix_web::{HttpRequest, HttpResponse, web};
use medialib_domain::media::{ByteSpan, RangeAnswer, resolve_range};
use medialib_ports::ObjectInfo;
use medialib_ports::services::{DeliverFailed, Delivery};

use crate::apidoc::media::{DeliveryAnswers, DeliveryPath, DeliveryRange};
use crate::error::ApiError;
use crate::state::AppState;
use crate::transfer::{on_thread, stream};

/// Registers the delivery route: `{file}` takes every segment after the signature.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        crate::routing::resource("/m/{object}/{expires}/{signature}/{file:.+}").to(deliver),
    );
}

impl From<DeliverFailed> for ApiError {
    fn from(e: DeliverFailed) -> Self {
        match e {
            DeliverFailed::Url(u) => Self::LinkRefused(u.to_string()),
            DeliverFailed::Missing => Self::Missing(e.to_string()),
            DeliverFailed::Storage(s) => s.into(),
            DeliverFailed::Store(s) => s.into(),
        }
    }
}

/// What the request's conditional and range headers ask, as strings to judge off the
/// async worker.
struct Conditions {
    range: Option<String>,
    if_range: Option<String>,
    if_none_match: Option<String>,
}

fn header_string(req: &HttpRequest, name: header::HeaderName) -> Option<String> {
    req.headers()
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

/// The strong `ETag` of a stored file.
fn etag(info: &ObjectInfo) -> String {
    format!("\"{}\"", info.etag)
}

/// Whether an `If-None-Match` list names this entity (weak comparison, RFC 9110 §13.1.2).
fn none_match(list: &str, etag: &str) -> bool {
    let bare = etag.trim_start_matches("W/");
    list.split(',').any(|t| {
        let t = t.trim();
        t == "*" || t.trim_start_matches("W/") == bare
    })
}

/// What to answer, decided once the file is known.
enum Plan {
    NotModified,
    Whole,
    Part(ByteSpan),
    Unsatisfiable,
}

fn plan(info: &ObjectInfo, c: &Conditions) -> Plan {
    let tag = etag(info);
    if c.if_none_match
        .as_deref()
        .is_some_and(|l| none_match(l, &tag))
    {
        return Plan::NotModified;
    }
    // If-Range with another validator than the current strong ETag: send everything.
    if c.if_range.as_deref().is_some_and(|v| v.trim() != tag) {
        return Plan::Whole;
    }
    match resolve_range(c.range.as_deref(), info.size) {
        RangeAnswer::Whole => Plan::Whole,
        RangeAnswer::Part(span) => Plan::Part(span),
        RangeAnswer::Unsatisfiable => Plan::Unsatisfiable,
    }
}

/// Answers of at most this many bytes are read whole on the thread that opened the file and
/// sent from memory: no second thread and no chunk queue for a player's typical range (an
/// HLS segment, a 1 MiB slice). Each holds its transfer slot until it has been sent, so at
/// most [`crate::admission::Transfers`]' slots of them exist at once, which bounds the memory
/// they take.
const SMALL_ANSWER: u64 = 1024 * 1024;

/// The body of a GET: read already, or to stream.
enum Body {
    Read(Vec<u8>),
    Stream(Box<dyn std::io::Read + Send>),
}

/// Reads `reading` whole when it is small; a short read is an error (the file changed under it).
fn small_or_stream(reading: medialib_ports::Reading, length: u64) -> std::io::Result<Body> {
    if length > SMALL_ANSWER {
        return Ok(Body::Stream(reading.body));
    }
    let mut all = Vec::with_capacity(usize::try_from(length).unwrap_or(0));
    let n = std::io::Read::read_to_end(&mut std::io::Read::take(reading.body, length), &mut all)?;
    if n as u64 != length {
        return Err(std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            "the stored file is shorter than it was",
        ));
    }
    Ok(Body::Read(all))
}

/// The body of a HEAD answer: the GET's size and no bytes. actix writes `Content-Length`
/// from the body's size (a `Content-Length` header set by hand loses to an empty body's 0),
/// and sends no body to a HEAD.
struct HeadOnly(u64);

impl actix_web::body::MessageBody for HeadOnly {
    type Error = std::convert::Infallible;

    fn size(&self) -> actix_web::body::BodySize {
        actix_web::body::BodySize::Sized(self.0)
    }

    fn poll_next(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<actix_web::web::Bytes, Self::Error>>> {
        std::task::Poll::Ready(None)
    }
}

fn http_date(t: medialib_domain::Timestamp) -> header::HttpDate {
    let secs = u64::try_from(t.epoch_seconds()).unwrap_or(0);
    header::HttpDate::from(std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs))
}

/// A stored media file, by the signed URL a record gave.
///
/// Needs no token: the signature is the permission, minted for a reader of the object and
/// valid until `expires`. `file` is the rest of the path and may hold `/` (`hls/720p.m3u8`),
/// so a playlist's relative URIs resolve under the same signature. Range requests (206),
/// `ETag`/`If-None-Match` (304), `If-Range`, `Last-Modified`, the file's `Content-Type`.
#[utoipa::path(
    get,
    path = "/m/{object}/{expires}/{signature}/{file}",
    operation_id = "media_file",
    tag = "delivery",
    security(()),
    params(DeliveryPath, DeliveryRange),
    responses(
        (status = 200, description = "The whole file.", content_type = "application/octet-stream", body = Vec<u8>),
        DeliveryAnswers,
    )
)]
pub(crate) async fn deliver(
    req: HttpRequest,
    path: web::Path<(String, String, String, String)>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    match answer(&req, path, &state).await {
        // A person who opened a media link (a bookmark, a link shared on) gets a page; a
        // player or a script gets the JSON error.
        Err(e) if crate::browser::wants_html(&req) => Ok(crate::browser::error_page(&e)),
        answered => answered,
    }
}

async fn answer(
    req: &HttpRequest,
    path: web::Path<(String, String, String, String)>,
    state: &web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let method = req.method().clone();
    if method != Method::GET && method != Method::HEAD {
        return Err(ApiError::MethodNotImplemented { allow: "GET, HEAD" });
    }
    let (object, expires, signature, file) = path.into_inner();
    let conditions = Conditions {
        range: header_string(req, header::RANGE),
        if_range: header_string(req, header::IF_RANGE),
        if_none_match: header_string(req, header::IF_NONE_MATCH),
    };
    let redirect = state.config().storage_redirect;
    let head = method == Method::HEAD;
    let (opened, slot) = on_thread(state, move |s| {
        let uploads = s.uploads();
        let delivery: Delivery =
            uploads.open_delivery(&object, &expires, &signature, &file, redirect)?;
        let Some(info) = delivery.info.clone() else {
            return Ok((delivery, Plan::Whole, None));
        };
        let plan = plan(&info, &conditions);
        let span = match (&plan, head) {
            (Plan::Whole, false) => None,
            (Plan::Part(span), false) => Some(*span),
            _ => return Ok((delivery, plan, None)),
        };
        let length = span.map_or(info.size, |s| s.len());
        let reading = uploads.read_delivery(&delivery, span)?;
        let body = small_or_stream(reading, length).map_err(|e| {
            DeliverFailed::Storage(medialib_ports::StorageError::Unexpected(format!(
                "reading a delivered file: {e}"
            )))
        })?;
        Ok::<_, DeliverFailed>((delivery, plan, Some(body)))
    })
    .await?;
    let (delivery, plan, reading) = opened?;
    if let Some(url) = &delivery.redirect {
        return Ok(HttpResponse::Found()
            .insert_header((header::LOCATION, url.as_str()))
            .insert_header((header::CACHE_CONTROL, "private, no-store"))
            .finish());
    }
    let Some(info) = delivery.info.as_ref() else {
        return Err(ApiError::Internal);
    };
    let mut builder = HttpResponse::build(StatusCode::OK);
    builder
        .insert_header((header::ACCEPT_RANGES, "bytes"))
        .insert_header((header::ETAG, etag(info)))
        .insert_header((header::LAST_MODIFIED, http_date(info.modified)))
        .insert_header((header::CACHE_CONTROL, "private, max-age=3600"))
        .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
        .insert_header((header::CONTENT_TYPE, delivery.content_type));
    if let Some(name) = &delivery.filename {
        builder.insert_header((
            header::CONTENT_DISPOSITION,
            header::ContentDisposition {
                disposition: header::DispositionType::Inline,
                parameters: vec![header::DispositionParam::Filename(name.as_str().to_owned())],
            },
        ));
    }
    let length = match plan {
        Plan::NotModified => {
            return Ok(builder.status(StatusCode::NOT_MODIFIED).finish());
        }
        Plan::Unsatisfiable => {
            return Ok(builder
                .status(StatusCode::RANGE_NOT_SATISFIABLE)
                .insert_header((header::CONTENT_RANGE, format!("bytes */{}", info.size)))
                .insert_header((header::CONTENT_TYPE, "application/json"))
                .body(r#"{"message":"the range starts at or past the end of the file"}"#));
        }
        Plan::Whole => info.size,
        Plan::Part(span) => {
            builder
                .status(StatusCode::PARTIAL_CONTENT)
                .insert_header((header::CONTENT_RANGE, span.content_range(info.size)));
            span.len()
        }
    };
    let Some(reading) = reading else {
        // HEAD: the headers of the GET, no body.
        return Ok(builder.body(HeadOnly(length)));
    };
    match reading {
        Body::Read(bytes) => {
            state
                .metrics
                .media_bytes(crate::metrics::Direction::Out, bytes.len() as u64);
            // In slices: actix-http copies each chunk into the connection's write buffer,
            // which would otherwise keep the size of the largest range for as long as the
            // connection lives (and copy a whole MiB out of the CPU's cache at once).
            Ok(builder.body(crate::answers::Chunked::holding(bytes, slot)))
        }
        Body::Stream(reader) => {
            let body = stream(state, slot, reader)?;
            Ok(builder.body(actix_web::body::SizedStream::new(length, body)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn if_none_match_compares_weakly_and_accepts_star() {
        assert!(none_match("\"a\"", "\"a\""));
        assert!(none_match("W/\"a\", \"b\"", "\"a\""));
        assert!(none_match("*", "\"a\""));
        assert!(!none_match("\"b\"", "\"a\""));
    }

    struct Up;

    impl crate::Readiness for Up {
        fn ready(&self) -> Result<(), String> {
            Ok(())
        }
    }

    /// A delivered body holds its transfer slot until it has been sent, whether it was read
    /// whole (a range of at most [`SMALL_ANSWER`]) or is streamed: the slots bound the bytes
    /// waiting for slow clients. Both hand the connection slices of at most
    /// [`crate::answers::CHUNK`]. A HEAD, which sends no bytes, gives its slot back at once.
    #[actix_web::test]
    async fn a_delivered_body_holds_its_transfer_slot_until_it_is_sent() {
        use std::sync::Arc;

        use actix_web::test;
        use medialib_adapters_memory::storage::MemoryStorage;
        use medialib_adapters_memory::testing::world;
        use medialib_domain::media::{UploadDescription, UploadLimits};
        use medialib_domain::{IdOrZero, Lifetime};
        use medialib_ports::services::{UploadSettings, UploadTarget};

        const MIB: usize = 1024 * 1024;
        let w = world();
        let services = w.h.services.clone().with_storage(
            Arc::new(MemoryStorage::new(MIB)),
            UploadSettings {
                limits: UploadLimits {
                    max_size: 4 * MIB as u64,
                    quota: None,
                },
                expiry: Lifetime::from_seconds(3_600).unwrap(),
                url_ttl: Lifetime::from_seconds(600).unwrap(),
                signing_key: None,
                instance: "test".into(),
            },
        );
        let alice = w.alice.as_caller();
        let bytes: Vec<u8> = (0..3 * MIB).map(|i| (i * 7 % 251) as u8).collect();
        let uploads = services.uploads();
        let target = UploadTarget {
            collection: w.lib,
            object: IdOrZero::Zero,
        };
        let described = UploadDescription::from_fields(&[("filename", "clip.mp4")]).unwrap();
        let object = uploads
            .begin(&alice, target, bytes.len() as u64, described)
            .unwrap()
            .object;
        uploads
            .append(&alice, w.lib, object, 0, None, &mut &bytes[..])
            .unwrap();
        let url = uploads.media(Some(&alice), w.lib, object).unwrap().files[0]
            .path
            .clone();
        let state = AppState::new(Arc::new(Up), services, crate::HttpConfig::default());
        let transfers = state.transfers().clone();
        let app = test::init_service(crate::app(state)).await;
        let all = transfers.available();

        for (range, length) in [("bytes=0-1023", 1024), ("bytes=0-2097151", 2 * MIB)] {
            assert_eq!(length > SMALL_ANSWER as usize, range.ends_with("151"));
            let request = test::TestRequest::get()
                .uri(&url)
                .insert_header((header::RANGE, range))
                .to_request();
            let res = test::call_service(&app, request).await;
            assert_eq!(res.status(), StatusCode::PARTIAL_CONTENT, "{range}");
            assert_eq!(transfers.available(), all - 1, "{range}: held while unsent");
            // Read as the connection reads it: chunk by chunk, none larger than a slice.
            let mut body = Box::pin(res.into_body());
            let mut read = Vec::new();
            while let Some(chunk) = std::future::poll_fn(|cx| {
                actix_web::body::MessageBody::poll_next(body.as_mut(), cx)
            })
            .await
            {
                let chunk = chunk.ok().unwrap();
                assert!(
                    chunk.len() <= crate::answers::CHUNK,
                    "{range}: {} bytes",
                    chunk.len()
                );
                read.extend_from_slice(&chunk);
            }
            drop(body);
            assert_eq!(read[..], bytes[..length], "{range}");
            assert_eq!(transfers.available(), all, "{range}: given back once sent");
        }
        let head = test::TestRequest::default()
            .method(Method::HEAD)
            .uri(&url)
            .to_request();
        let res = test::call_service(&app, head).await;
        assert_eq!(res.status(), StatusCode::OK);
        assert_eq!(transfers.available(), all, "a HEAD holds nothing");
    }
}
