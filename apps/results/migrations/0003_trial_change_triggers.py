"""PostgreSQL triggers that mark a task dirty in results_dirtytask whenever a scoring-relevant column of one of its
trials changes (insert, delete, or update of those columns), and mark every task with trials dirty once."""

from django.db import migrations

COLUMNS = (
    "workspace_id, evaluation_id, task_id, agent, configuration_key, configuration_label, harness_id, environment_id, "
    "status, reward, started_at, finished_at, input_tokens, cached_input_tokens, cache_write_tokens, output_tokens, "
    "reasoning_tokens, cost_usd, cost_complete, model_verified"
)

OLD_COLUMNS = ", ".join(f"OLD.{c.strip()}" for c in COLUMNS.split(","))
NEW_COLUMNS = ", ".join(f"NEW.{c.strip()}" for c in COLUMNS.split(","))

FORWARD = f"""
CREATE OR REPLACE FUNCTION results_mark_rows_dirty() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO results_dirtytask (workspace_id, task_id)
        SELECT DISTINCT workspace_id, task_id FROM new_rows ON CONFLICT DO NOTHING;
    ELSE
        INSERT INTO results_dirtytask (workspace_id, task_id)
        SELECT DISTINCT workspace_id, task_id FROM old_rows ON CONFLICT DO NOTHING;
    END IF;
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION results_mark_row_dirty() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO results_dirtytask (workspace_id, task_id) VALUES (NEW.workspace_id, NEW.task_id)
    ON CONFLICT DO NOTHING;
    IF OLD.task_id <> NEW.task_id OR OLD.workspace_id <> NEW.workspace_id THEN
        INSERT INTO results_dirtytask (workspace_id, task_id) VALUES (OLD.workspace_id, OLD.task_id)
        ON CONFLICT DO NOTHING;
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER results_trials_inserted AFTER INSERT ON runs_trial
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION results_mark_rows_dirty();
CREATE TRIGGER results_trials_deleted AFTER DELETE ON runs_trial
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION results_mark_rows_dirty();
CREATE TRIGGER results_trial_updated AFTER UPDATE OF {COLUMNS} ON runs_trial
    FOR EACH ROW WHEN (({OLD_COLUMNS}) IS DISTINCT FROM ({NEW_COLUMNS})) EXECUTE FUNCTION results_mark_row_dirty();

INSERT INTO results_dirtytask (workspace_id, task_id)
SELECT DISTINCT workspace_id, task_id FROM runs_trial ON CONFLICT DO NOTHING;
"""

BACKWARD = """
DROP TRIGGER IF EXISTS results_trials_inserted ON runs_trial;
DROP TRIGGER IF EXISTS results_trials_deleted ON runs_trial;
DROP TRIGGER IF EXISTS results_trial_updated ON runs_trial;
DROP FUNCTION IF EXISTS results_mark_rows_dirty();
DROP FUNCTION IF EXISTS results_mark_row_dirty();
"""


def forward(apps, schema_editor):  # type: ignore[no-untyped-def]
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(FORWARD)


def backward(apps, schema_editor):  # type: ignore[no-untyped-def]
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(BACKWARD)


class Migration(migrations.Migration):
    dependencies = [
        ("results", "0002_latest_results_cache"),
        ("runs", "0002_reaper_schedule"),
    ]

    operations = [migrations.RunPython(forward, backward)]
