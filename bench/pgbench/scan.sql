-- The rows of the catalog GET of one library (-D lib=...): its members' object rows, most
-- recently modified first, the ceiling of the catalog scenario in rows/s.
SELECT o.id, o.object_type, o.title, o.description, o.public, o.duration, o.owner_id,
       o.shortcode, o.created_at, o.modified_at
  FROM memberships m JOIN objects o ON o.id = m.member_id
  WHERE m.collection_id = :lib AND o.deleted_at IS NULL
  ORDER BY o.modified_at DESC;
