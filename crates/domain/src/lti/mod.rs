//! LTI: medialib as a tool that learning management systems launch (DECISIONS.md §8).
//!
//! What a launch says, whatever its generation: who the person is ([`Person`]), what the
//! course makes them ([`CourseRole`]), which course ([`Course`]), and what they came for.
//! [`oauth1`] checks LTI 1.1 signatures; [`v1p1`] reads an LTI 1.1 launch's parameters.
//! Nothing here trusts a launch before its signature is checked: the readers take only a
//! [`oauth1::VerifiedRequest`].

pub mod oauth1;
pub mod v1p1;
pub mod v1p3;

use crate::{PermissionLevel, PersonName, Title, UniqueId};

/// What a launch's roles make a person in the course library.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CourseRole {
    /// An instructor, administrator, content developer or teaching assistant: `admin` on
    /// the course library, and the picker.
    Teacher,
    /// Everyone else (learners, mentors, guests, no role at all): `view`.
    Learner,
}

/// The role names (a URI's last segments, or a short name) that make a [`CourseRole::Teacher`].
const TEACHING_ROLES: [&str; 4] = [
    "Instructor",
    "Administrator",
    "ContentDeveloper",
    "TeachingAssistant",
];

impl CourseRole {
    /// The role of a person with these roles: LTI 1.1 short names (`Instructor`), LTI 1.1
    /// URNs (`urn:lti:role:ims/lis/TeachingAssistant`) and LIS v2 URIs
    /// (`http://purl.imsglobal.org/vocab/lis/v2/membership/Instructor#TeachingAssistant`)
    /// alike. A role *contains* a teaching name when one of its segments (split at `/`,
    /// `#` and `:`) is that name, so `Instructor#Lecturer` teaches and `NonInstructor`
    /// would not.
    pub fn of<'a>(roles: impl IntoIterator<Item = &'a str>) -> Self {
        let teaches = roles.into_iter().any(|role| {
            role.trim()
                .split(['/', '#', ':'])
                .any(|segment| TEACHING_ROLES.contains(&segment))
        });
        if teaches {
            Self::Teacher
        } else {
            Self::Learner
        }
    }

    /// The level a launch gives on the course library.
    pub fn level(self) -> PermissionLevel {
        match self {
            Self::Teacher => PermissionLevel::Admin,
            Self::Learner => PermissionLevel::View,
        }
    }

    /// Whether the person may pick media for the course (the picker of Deep Linking and
    /// Content-Item selection) and create the course library.
    pub fn may_pick(self) -> bool {
        self == Self::Teacher
    }
}

/// The person a launch signs in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Person {
    /// Their medialib uniqueId, as the platform's identifiers give it.
    pub unique_id: UniqueId,
    /// Their given name, when the platform sends one that fits.
    pub first_name: Option<PersonName>,
    /// Their family name, when the platform sends one that fits.
    pub last_name: Option<PersonName>,
}

/// A course of a platform: the key its library is found by, and the title it gets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Course {
    key: CourseKey,
    title: Title,
}

impl Course {
    /// Which course.
    pub fn key(&self) -> &CourseKey {
        &self.key
    }

    /// The title its library is created with: the context's title, else its label (Warpwire's
    /// Moodle plugin sends only `context_label`), else its id.
    pub fn title(&self) -> &Title {
        &self.title
    }

    /// A course from a platform's context parameters; `None` without a usable context id.
    fn from_context(
        platform: &str,
        id: Option<&str>,
        title: Option<&str>,
        label: Option<&str>,
    ) -> Option<Self> {
        let key = CourseKey::new(platform, id?)?;
        let shown = [title, label, Some(key.context.as_str())]
            .into_iter()
            .flatten()
            .map(str::trim)
            .find(|t| !t.is_empty())?;
        let shown: String = shown
            .chars()
            .filter(|c| !c.is_control())
            .take(Title::MAX_CHARS)
            .collect();
        Some(Self {
            key,
            title: Title::parse(&shown).ok()?,
        })
    }
}

/// A course's identity: the platform (an LTI 1.1 consumer key, or an LTI 1.3 issuer and
/// client id) and the context id the platform gives it. Each part is 1 to 255 characters.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CourseKey {
    platform: String,
    context: String,
}

impl CourseKey {
    /// The longest part, in characters.
    pub const MAX_CHARS: usize = 255;

    /// A key, or `None` when a part is empty, too long or holds a control character.
    pub fn new(platform: &str, context: &str) -> Option<Self> {
        let fits = |s: &str| {
            !s.is_empty()
                && s.chars().count() <= Self::MAX_CHARS
                && !s.chars().any(char::is_control)
        };
        (fits(platform) && fits(context)).then(|| Self {
            platform: platform.to_owned(),
            context: context.to_owned(),
        })
    }

    /// The platform part.
    pub fn platform(&self) -> &str {
        &self.platform
    }

    /// The context part.
    pub fn context(&self) -> &str {
        &self.context
    }
}

/// What a launch does to the person's access to the course library, given what they have
/// now: only ever raises it, so an administrator's manual grant survives a learner launch
/// and an explicit `none` set by the library's admins stays (a launch does not undo it).
pub fn course_level_after_launch(
    role: CourseRole,
    current: Option<PermissionLevel>,
) -> Option<PermissionLevel> {
    match current {
        None => Some(role.level()),
        Some(PermissionLevel::None) => None,
        Some(level) if level >= role.level() => None,
        Some(_) => Some(role.level()),
    }
}

/// The path of `url` when it is one of the service's own pages (under `base`, the service's
/// public base URL): where a launch's `returnContext` may lead. `None` for another site's
/// address, which a launch never redirects to.
pub fn own_page(url: &str, base: &str) -> Option<String> {
    let base = base.trim_end_matches('/');
    let path = url.strip_prefix(base)?;
    let fits = path.starts_with('/')
        && !path.starts_with("//")
        && !path.contains('\\')
        && !path.chars().any(|c| c.is_control() || c.is_whitespace());
    fits.then(|| path.to_owned())
}

/// A person's name from an optional platform value: `None` when absent or too long.
fn name(value: Option<&str>) -> Option<PersonName> {
    value.and_then(|v| PersonName::parse(v.trim(), "name").ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn teaching_roles_are_found_in_every_spelling() {
        for roles in [
            "Instructor",
            "urn:lti:role:ims/lis/TeachingAssistant",
            "Learner,urn:lti:instrole:ims/lis/Administrator",
            "http://purl.imsglobal.org/vocab/lis/v2/membership#ContentDeveloper",
            "http://purl.imsglobal.org/vocab/lis/v2/membership/Instructor#Lecturer",
            " urn:lti:sysrole:ims/lis/Administrator ",
        ] {
            assert_eq!(
                CourseRole::of(roles.split(',')),
                CourseRole::Teacher,
                "{roles}"
            );
        }
        for roles in [
            "",
            "Learner",
            "urn:lti:role:ims/lis/Learner/NonCreditLearner",
            "http://purl.imsglobal.org/vocab/lis/v2/membership#Mentor",
            "NonInstructor,instructor",
        ] {
            assert_eq!(
                CourseRole::of(roles.split(',')),
                CourseRole::Learner,
                "{roles}"
            );
        }
    }

    #[test]
    fn a_launch_raises_a_level_and_never_lowers_or_overrides_none() {
        use PermissionLevel::{Admin, None as Blocked, View};
        let t = CourseRole::Teacher;
        let l = CourseRole::Learner;
        assert_eq!(course_level_after_launch(t, None), Some(Admin));
        assert_eq!(course_level_after_launch(l, None), Some(View));
        assert_eq!(course_level_after_launch(t, Some(View)), Some(Admin));
        assert_eq!(course_level_after_launch(l, Some(Admin)), None);
        assert_eq!(course_level_after_launch(l, Some(View)), None);
        assert_eq!(course_level_after_launch(t, Some(Blocked)), None);
    }

    #[test]
    fn only_the_services_own_pages_are_followed() {
        let base = "https://media.example.edu/";
        assert_eq!(
            own_page("https://media.example.edu/w/abc", base).as_deref(),
            Some("/w/abc")
        );
        assert_eq!(
            own_page(
                "https://media.example.edu/m/x?t=1",
                "https://media.example.edu"
            )
            .as_deref(),
            Some("/m/x?t=1")
        );
        for other in [
            "https://media.example.edu.evil.example/w/abc",
            "https://media.example.edu",
            "https://media.example.edu//evil.example/",
            "https://media.example.edu/\\evil.example",
            "https://media.example.edu/a b",
            "https://other.example.edu/w/abc",
            "/w/abc",
        ] {
            assert_eq!(own_page(other, base), None, "{other}");
        }
    }

    #[test]
    fn a_course_is_titled_by_its_title_then_label_then_id() {
        let c = Course::from_context("k", Some("c1"), Some(" Bio 101 "), Some("BIO")).unwrap();
        assert_eq!(c.title().as_str(), "Bio 101");
        let c = Course::from_context("k", Some("c1"), Some(""), Some("BIO")).unwrap();
        assert_eq!(c.title().as_str(), "BIO");
        let c = Course::from_context("k", Some("c1"), None, None).unwrap();
        assert_eq!(c.title().as_str(), "c1");
        let long = "t\u{7}".repeat(400);
        let c = Course::from_context("k", Some("c1"), Some(&long), None).unwrap();
        assert_eq!(c.title().as_str().chars().count(), Title::MAX_CHARS);
        assert_eq!(Course::from_context("k", None, Some("Bio"), None), None);
        assert_eq!(Course::from_context("k", Some(""), Some("Bio"), None), None);
        assert_eq!(CourseKey::new("", "c"), None);
        assert_eq!(CourseKey::new("k", &"c".repeat(256)), None);
    }
}
