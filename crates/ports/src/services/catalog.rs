//! Use cases around a collection's contents that the catalog, embed, video and page
//! calls need beyond the core ones in `media`: listing a sub-catalog through its
//! parent, reading an object a caller may view, and resolving a permLink.

use medialib_domain::authz::decide;
use medialib_domain::media::records::has_video_record;
use medialib_domain::{
    Action, Caller, MediaObject, ObjectId, ObjectType, PageRequest, ShortCode, Since,
};

use super::media::reached_object;
use super::{CatalogSink, MediaServices};
use crate::error::StoreError;
use crate::failures::failures;
use crate::repos::{Members, Reader};

failures! {
    /// Listing a sub-catalog `S` through its parent `C` (`catalog/c/{C}/o/{S}`) failed.
    pub enum SubCatalogFailed {
        NotFound,
        /// `S` is not a catalog.
        #[error("the object is not a collection: only a catalog member can be listed")]
        NotACollection,
        Refused(Refusal),
        Store(StoreError),
    }

    /// Reading an object that the caller must be able to view (embed) failed.
    pub enum ViewObjectFailed {
        NotFound,
        Refused(Refusal),
        Store(StoreError),
    }

    /// Reading a video record failed.
    pub enum VideoFailed {
        NotFound,
        Refused(Refusal),
        /// The object is neither a video nor an audio recording.
        #[error("not a video or an audio recording: the object's type is {0}")]
        NotPlayable(ObjectType),
        Store(StoreError),
    }

    /// Following a permLink failed.
    pub enum PermLinkFailed {
        /// No live object has this shortcode.
        #[error("no object has this permLink")]
        NotFound,
        Store(StoreError),
    }

    /// Showing an object to a browser without an API token (landing page, embed, oEmbed) failed.
    pub enum PublicObjectFailed {
        /// No live object has this shortcode.
        #[error("no object has this permLink")]
        NotFound,
        /// The object is not public and the browser has no session: sign-in is needed.
        #[error("sign-in required")]
        SignInRequired,
        Store(StoreError),
    }
}

impl From<ViewObjectFailed> for VideoFailed {
    fn from(e: ViewObjectFailed) -> Self {
        match e {
            ViewObjectFailed::NotFound => Self::NotFound,
            ViewObjectFailed::Refused(r) => Self::Refused(r),
            ViewObjectFailed::Store(s) => Self::Store(s),
        }
    }
}

impl MediaServices {
    /// Lists `sub`, a catalog member of `collection` (catalog GET `c/{C}/o/{S}`).
    ///
    /// The path rule of reading through `c/{C}` holds (S must be a member of C, the caller
    /// needs `view` on C), and the listing itself is done with the caller's effective level
    /// on S, which must be `view` or more too: an explicit `none` on S hides it even from
    /// viewers of C. The page carries that level on S. `page` as for
    /// [`list_catalog`](Self::list_catalog); each member reaches `sink` as it is read, and
    /// nothing does when the listing is refused.
    pub fn list_sub_catalog_into(
        &self,
        caller: &Caller,
        collection: ObjectId,
        sub: ObjectId,
        since: Option<Since>,
        page: Option<PageRequest>,
        sink: &mut dyn CatalogSink,
    ) -> Result<(), SubCatalogFailed> {
        let ts = self.world.clock.now();
        if self.media.object(collection)?.is_none() || !self.media.is_member(collection, sub)? {
            return Err(SubCatalogFailed::NotFound);
        }
        let listed = self.media.object(sub)?.ok_or(SubCatalogFailed::NotFound)?;
        self.gate(caller, Action::Read { collection })??;
        if !listed.object_type().is_collection() {
            return Err(SubCatalogFailed::NotACollection);
        }
        let level = self
            .gate(caller, Action::Read { collection: sub })??
            .level();
        sink.start(ts, level);
        let members = Members {
            collection: sub,
            since,
            page,
        };
        self.members_into(members, sink)?;
        Ok(())
    }

    /// An object reached through `collection` (a member, or the collection itself) that
    /// the caller may view: `view` on the collection is needed, whether or not the object
    /// is public (embed GET).
    pub fn view_object(
        &self,
        caller: &Caller,
        collection: ObjectId,
        object: ObjectId,
    ) -> Result<MediaObject, ViewObjectFailed> {
        let mut facts = self
            .media
            .read_facts(Reader::User(caller.user()), collection, object)?;
        let found =
            reached_object(&mut facts, collection, object).ok_or(ViewObjectFailed::NotFound)?;
        decide(caller, Action::Read { collection }, &facts.access)?;
        Ok(found)
    }

    /// A video or an audio recording the caller may view (video GET,
    /// [`has_video_record`]); any other type is refused.
    pub fn view_video(
        &self,
        caller: &Caller,
        collection: ObjectId,
        object: ObjectId,
    ) -> Result<MediaObject, VideoFailed> {
        let found = self.view_object(caller, collection, object)?;
        if has_video_record(found.object_type()) {
            Ok(found)
        } else {
            Err(VideoFailed::NotPlayable(found.object_type()))
        }
    }

    /// The live object a permLink names, public or not (`GET /w/{shortcode}`).
    pub fn follow_perm_link(&self, code: &ShortCode) -> Result<MediaObject, PermLinkFailed> {
        self.media
            .object_by_shortcode(code)?
            .ok_or(PermLinkFailed::NotFound)
    }

    /// The live object a permLink names, for the landing page of a browser whose session
    /// is `caller` (`None`: no session): a public object to anyone, a private one to a
    /// signed-in person who may see it (`view` through some collection holding it). Without
    /// a session a private object asks for sign-in; a signed-in person without access is
    /// told nothing more than of an unknown link.
    pub fn page_object(
        &self,
        caller: Option<&Caller>,
        code: &ShortCode,
    ) -> Result<MediaObject, PublicObjectFailed> {
        let found = self
            .media
            .object_by_shortcode(code)?
            .ok_or(PublicObjectFailed::NotFound)?;
        let see = Action::See {
            object: found.id(),
            public: found.is_public(),
        };
        match caller {
            _ if found.is_public() => Ok(found),
            None => Err(PublicObjectFailed::SignInRequired),
            Some(caller) => match self.gate(caller, see)? {
                Ok(_) => Ok(found),
                Err(_) => Err(PublicObjectFailed::NotFound),
            },
        }
    }

    /// The libraries to show a signed-in person on the home page: the live catalogs on
    /// which they hold an entry and that the gate lets them read (an entry of level `none`
    /// hides a library rather than showing it), ordered by title, then id.
    pub fn libraries_of(&self, caller: &Caller) -> Result<Vec<MediaObject>, StoreError> {
        let mut out = Vec::new();
        for library in self.media.catalogs_with_entries_for(caller.user())? {
            let read = Action::Read {
                collection: library.id(),
            };
            if self.permits(caller, read)? {
                out.push(library);
            }
        }
        out.sort_by(MediaObject::by_title);
        Ok(out)
    }

    /// The live object a permLink names, if it may be shown without a session: only
    /// public objects (embed page and script, oEmbed).
    pub fn public_object(&self, code: &ShortCode) -> Result<MediaObject, PublicObjectFailed> {
        let found = self
            .media
            .object_by_shortcode(code)?
            .ok_or(PublicObjectFailed::NotFound)?;
        // Anonymous: the gate shows a public object's limited record and nothing else.
        let anonymous = medialib_domain::authz::decide_describe(
            None,
            found.id(),
            found.is_public(),
            &medialib_domain::AccessView::default(),
        );
        match anonymous {
            Ok(_) => Ok(found),
            Err(_) => Err(PublicObjectFailed::SignInRequired),
        }
    }
}
