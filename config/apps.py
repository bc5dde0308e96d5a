"""The admin app with Salience's site (config/admin_site.py) as `admin.site`."""

from django.contrib.admin.apps import AdminConfig as DjangoAdminConfig


class AdminConfig(DjangoAdminConfig):
    default_site = "config.admin_site.AdminSite"
