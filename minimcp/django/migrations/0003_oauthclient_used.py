from django.db import migrations, models


def mark_clients_with_grants_used(apps, schema_editor):
    """A client someone already allowed is used: it must not expire as an unused registration."""
    apps.get_model("minimcp", "OAuthClient").objects.filter(grants__isnull=False).update(used=True)


class Migration(migrations.Migration):

    dependencies = [
        ('minimcp', '0002_oauth'),
    ]

    operations = [
        migrations.AddField(
            model_name='oauthclient',
            name='used',
            field=models.BooleanField(default=False, editable=False),
        ),
        migrations.RunPython(mark_clients_with_grants_used, migrations.RunPython.noop),
    ]
