//! An LTI 1.1 launch, read from a request whose OAuth 1.0a signature was checked: the two
//! messages Warpwire's plugins send (`basic-lti-launch-request`, `ContentItemSelectionRequest`)
//! and what they say of the person and the course (DECISIONS.md §8).

use super::oauth1::VerifiedRequest;
use super::{Course, CourseRole, Person, name};
use crate::{ObjectId, UniqueId};

/// An LTI 1.1 launch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launch {
    /// Who.
    pub person: Person,
    /// What the course makes them.
    pub role: CourseRole,
    /// Which course; `None` when the launch names no context.
    pub course: Option<Course>,
    /// What they came for.
    pub message: Message,
    /// `returnContext`: an address of medialib's that Warpwire's plugin asks to be shown after
    /// the launch (the caller checks it is medialib's own before following it).
    pub return_context: Option<String>,
}

/// What a launch asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Message {
    /// `basic-lti-launch-request`: the player of `media` (the custom parameter `media`), or,
    /// without it, the course library.
    Resource {
        /// `resource_link_id`, which Warpwire's plugin leaves out.
        link: Option<String>,
        /// The object to play.
        media: Option<ObjectId>,
    },
    /// `ContentItemSelectionRequest`: the picker.
    Pick(PickRequest),
}

/// A Content-Item selection request: where the pick goes back to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PickRequest {
    /// `content_item_return_url`, else `launch_presentation_return_url` (Warpwire's plugin
    /// sends only the latter); an absolute `http(s)` URL.
    pub return_url: String,
    /// `data`: opaque, sent back as it came.
    pub data: Option<String>,
    /// Whether `accept_media_types` takes an LTI link (`application/vnd.ims.lti.v1.ltilink`);
    /// when it does not, the pick returns an HTML embed.
    pub accepts_link: bool,
}

/// Why a verified request is not a launch medialib can serve.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LaunchRefusal {
    /// `lti_version` is missing or not 1.x.
    #[error("`lti_version` must be LTI-1p0 (LTI 1.1)")]
    Version,
    /// A message type other than the two medialib serves.
    #[error("medialib answers basic-lti-launch-request and ContentItemSelectionRequest, not `{0}`")]
    MessageType(String),
    /// None of `ext_user_username`, `lis_person_sourcedid` and `user_id`.
    #[error("the launch names no user (ext_user_username, lis_person_sourcedid or user_id)")]
    NoUser,
    /// The identifier the platform gave does not make a uniqueId.
    #[error(
        "the user's identifier is not a valid uniqueId (1 to 255 characters, no control characters)"
    )]
    BadUser,
    /// `custom_media` that is not an object id.
    #[error("the custom parameter `media` is not a media id")]
    BadMedia,
    /// A selection request without an `http(s)` URL to return to.
    #[error("a ContentItemSelectionRequest needs content_item_return_url (an http or https URL)")]
    NoReturnUrl,
}

/// The accepted `lti_version`s (1.2 is 1.1 with more services; its launches are the same).
const VERSIONS: [&str; 2] = ["LTI-1p0", "LTI-1p2"];

/// The media type of an LTI link in `accept_media_types`.
const LTI_LINK: &str = "application/vnd.ims.lti.v1.ltilink";

/// Reads a launch from a verified request.
pub fn read(request: &VerifiedRequest) -> Result<Launch, LaunchRefusal> {
    let get = |name: &str| request.get(name).map(str::trim).filter(|v| !v.is_empty());
    if !get("lti_version").is_some_and(|v| VERSIONS.contains(&v)) {
        return Err(LaunchRefusal::Version);
    }
    let message = match get("lti_message_type").unwrap_or_default() {
        "basic-lti-launch-request" => Message::Resource {
            link: get("resource_link_id").map(str::to_owned),
            media: get("custom_media")
                .map(|m| ObjectId::parse(m).map_err(|_| LaunchRefusal::BadMedia))
                .transpose()?,
        },
        "ContentItemSelectionRequest" => Message::Pick(PickRequest {
            return_url: get("content_item_return_url")
                .or_else(|| get("launch_presentation_return_url"))
                .filter(|u| is_http_url(u))
                .ok_or(LaunchRefusal::NoReturnUrl)?
                .to_owned(),
            data: request.get("data").map(str::to_owned),
            accepts_link: get("accept_media_types").is_none_or(|types| {
                types.split(',').any(|t| {
                    let t = t.trim();
                    t == LTI_LINK || t == "*/*" || t == "application/*"
                })
            }),
        }),
        other => return Err(LaunchRefusal::MessageType(other.chars().take(64).collect())),
    };
    let unique_id = match (
        get("ext_user_username"),
        get("lis_person_sourcedid"),
        get("user_id"),
    ) {
        (Some(id), _, _) | (None, Some(id), _) => id.to_owned(),
        (None, None, Some(id)) => format!("{}:{id}", request.consumer_key()),
        (None, None, None) => return Err(LaunchRefusal::NoUser),
    };
    let person = Person {
        unique_id: UniqueId::parse(&unique_id).map_err(|_| LaunchRefusal::BadUser)?,
        first_name: name(get("lis_person_name_given")),
        last_name: name(get("lis_person_name_family")),
    };
    Ok(Launch {
        person,
        role: CourseRole::of(get("roles").unwrap_or_default().split(',')),
        course: Course::from_context(
            request.consumer_key(),
            get("context_id"),
            get("context_title"),
            get("context_label"),
        ),
        message,
        return_context: get("returnContext").map(str::to_owned),
    })
}

/// Whether `url` is an absolute `http` or `https` URL with a host.
pub(super) fn is_http_url(url: &str) -> bool {
    let lower = url.get(..8).unwrap_or(url).to_ascii_lowercase();
    let rest = if lower.starts_with("https://") {
        &url[8..]
    } else if lower.starts_with("http://") {
        &url[7..]
    } else {
        return false;
    };
    !rest.is_empty() && !rest.starts_with('/') && !url.chars().any(char::is_control)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Secret;
    use crate::Timestamp;
    use crate::lti::oauth1::{SignedRequest, sign};

    const URL: &str = "https://media.example.edu/api/lti/";

    fn launch(params: &[(&str, &str)]) -> Result<Launch, LaunchRefusal> {
        let secret = Secret::new("s");
        let now = Timestamp::from_epoch_seconds(1_800_000_000);
        let params = params
            .iter()
            .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
            .collect();
        let signed = sign(URL, params, "moodle", &secret, "n1", now).unwrap();
        let verified = SignedRequest::parse("POST", URL, signed)
            .unwrap()
            .verify(&secret, now)
            .unwrap();
        read(&verified)
    }

    const WARPWIRE: [(&str, &str); 9] = [
        ("lti_version", "LTI-1p0"),
        ("lti_message_type", "ContentItemSelectionRequest"),
        ("user_id", "7"),
        ("lis_person_sourcedid", "ada"),
        ("ext_user_username", "ada.l"),
        ("roles", "Instructor"),
        ("context_id", "12"),
        ("context_label", "BIO101"),
        (
            "launch_presentation_return_url",
            "https://moodle.example.edu/local/warpwire/html/warpwire.html",
        ),
    ];

    #[test]
    fn warpwires_picker_request_is_read_as_it_is_sent() {
        let l = launch(&WARPWIRE).unwrap();
        assert_eq!(l.person.unique_id.as_str(), "ada.l");
        assert_eq!(l.role, CourseRole::Teacher);
        let course = l.course.unwrap();
        assert_eq!(
            (course.key().platform(), course.key().context()),
            ("moodle", "12")
        );
        assert_eq!(course.title().as_str(), "BIO101");
        let Message::Pick(pick) = l.message else {
            panic!("not a pick")
        };
        assert_eq!(pick.return_url, WARPWIRE[8].1);
        assert!(pick.accepts_link);
    }

    #[test]
    fn the_unique_id_falls_back_to_the_sourcedid_then_the_keyed_user_id() {
        let mut p = WARPWIRE.to_vec();
        p.retain(|(n, _)| *n != "ext_user_username");
        assert_eq!(launch(&p).unwrap().person.unique_id.as_str(), "ada");
        p.retain(|(n, _)| *n != "lis_person_sourcedid");
        assert_eq!(launch(&p).unwrap().person.unique_id.as_str(), "moodle:7");
        p.retain(|(n, _)| *n != "user_id");
        assert_eq!(launch(&p), Err(LaunchRefusal::NoUser));
    }

    #[test]
    fn a_resource_launch_names_its_media() {
        let id = "5f0c6e2a-5b1e-4a5e-9c1d-3a1b2c3d4e5f";
        let base = [
            ("lti_version", "LTI-1p0"),
            ("lti_message_type", "basic-lti-launch-request"),
            ("resource_link_id", "rl1"),
            ("user_id", "7"),
            ("roles", "Learner"),
        ];
        let mut p = base.to_vec();
        p.push(("custom_media", id));
        let l = launch(&p).unwrap();
        assert_eq!(l.role, CourseRole::Learner);
        assert_eq!(l.course, None);
        assert_eq!(
            l.message,
            Message::Resource {
                link: Some("rl1".into()),
                media: Some(ObjectId::parse(id).unwrap())
            }
        );
        p.pop();
        p.push(("custom_media", "nope"));
        assert_eq!(launch(&p), Err(LaunchRefusal::BadMedia));
    }

    #[test]
    fn what_medialib_does_not_serve_is_refused_with_its_reason() {
        let with = |name: &'static str, value: &'static str| {
            let mut p = WARPWIRE.to_vec();
            p.retain(|(n, _)| *n != name);
            if !value.is_empty() {
                p.push((name, value));
            }
            launch(&p)
        };
        assert_eq!(with("lti_version", ""), Err(LaunchRefusal::Version));
        assert_eq!(with("lti_version", "1.3.0"), Err(LaunchRefusal::Version));
        assert_eq!(
            with("lti_message_type", "ToolProxyRegistrationRequest"),
            Err(LaunchRefusal::MessageType(
                "ToolProxyRegistrationRequest".into()
            ))
        );
        assert_eq!(
            with("launch_presentation_return_url", ""),
            Err(LaunchRefusal::NoReturnUrl)
        );
        assert_eq!(
            with("launch_presentation_return_url", "javascript:alert(1)"),
            Err(LaunchRefusal::NoReturnUrl)
        );
        assert_eq!(
            with("ext_user_username", "a\u{1}b"),
            Err(LaunchRefusal::BadUser)
        );
        let Ok(Launch {
            message: Message::Pick(pick),
            ..
        }) = with("accept_media_types", "text/html")
        else {
            panic!("a pick")
        };
        assert!(!pick.accepts_link);
    }

    #[test]
    fn http_urls_are_told_apart() {
        assert!(is_http_url("https://lms.example.edu/x"));
        assert!(is_http_url("HTTP://lms"));
        for bad in [
            "https://",
            "http:///x",
            "ftp://x",
            "//x",
            "/x",
            "https://a\nb",
        ] {
            assert!(!is_http_url(bad), "{bad}");
        }
    }
}
