"""A session's title as SQL, for every query that lists sessions (the CLI's and the review app's)."""

# The first prompt's text, else the agent's own title (cline_title); ``s`` is the sessions row.
TITLE_SQL = """
    coalesce(
      (SELECT json_extract(postrun_record(st.record), '$.payload.text') FROM steps st
        WHERE st.session_id = s.id AND st.type = 'message'
          AND json_extract(postrun_record(st.record), '$.payload.role') = 'user'
          AND trim(coalesce(json_extract(postrun_record(st.record), '$.payload.text'), '')) != ''
        ORDER BY st.seq LIMIT 1),
      s.cline_title, '')
"""
