from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from django.views.generic import RedirectView

from tems import oidc, views

urlpatterns = [
    path("", RedirectView.as_view(pattern_name="registrations:event_list"), name="home"),
    path("favicon.ico", views.favicon, name="favicon"),
    # Linked from every idempotency error (tems.idempotency.POLICY_PATH): a stable address.
    path("idempotency-key/", views.idempotency_policy, name="idempotency_policy"),
    path("accounts/", views.account, name="account"),
    path("accounts/calendar/revoke/", views.calendar_feed_revoke, name="calendar_feed_revoke"),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", oidc.LogoutView.as_view(), name="logout"),
    path("accounts/signup/", views.signup, name="signup"),
    path("accounts/password/", views.PasswordChangeView.as_view(), name="password_change"),
    path("accounts/password/reset/", views.PasswordResetView.as_view(), name="password_reset"),
    path("accounts/password/reset/sent/", auth_views.PasswordResetDoneView.as_view(), name="password_reset_done"),
    path("accounts/password/reset/<uidb64>/<token>/", auth_views.PasswordResetConfirmView.as_view(),
         name="password_reset_confirm"),
    path("accounts/password/reset/done/", auth_views.PasswordResetCompleteView.as_view(),
         name="password_reset_complete"),
    path("accounts/sso/", oidc.OidcStartView.as_view(), name="oidc_start"),
    path("accounts/sso/callback/", oidc.OidcCallbackView.as_view(), name="oidc_callback"),
    path("accounts/sso/link/", oidc.OidcLinkView.as_view(), name="oidc_link"),
    path("accounts/verify-email/", views.verify_email, name="verify_email"),
    path("accounts/verify-email/<str:token>/", views.verify_email_confirm, name="verify_email_confirm"),
    path("admin/", admin.site.urls),
    path("", include("tems.teams.urls")),
    path("", include("registrations.urls")),
    path("", include("registrations.checkins.urls")),
    path("", include("registrations.privacy.urls")),
    path("", include("inventory.urls")),
    path("", include("lab.urls")),
]
