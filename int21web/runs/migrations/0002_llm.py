from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("runs", "0001_initial")]

    operations = [
        migrations.AddField(
            model_name="run", name="llm_usage",
            field=models.JSONField(blank=True, default=dict,
                                   help_text="LLM spend: requests, tokens_in/out, cost, unusable, errors, paused")),
        migrations.AddField(
            model_name="candidate", name="meta",
            field=models.JSONField(blank=True, default=dict,
                                   help_text="an LLM-written candidate: model, prompt, raw answer, tokens, latency")),
    ]
