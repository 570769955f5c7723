// The application shell: navigation, the live-update status, routes.
// Routes are hash routes (#/volume/NAME), so the static files work under
// any path prefix without server-side rewrites, as Longhorn's UI does.

import { createHashRouter, NavLink, Outlet, RouterProvider, useRouteError, Navigate } from "react-router";
import { useState } from "react";
import { ConnectionBanner, LiveDot } from "./components/Connection";
import { ToastProvider } from "./components/Toasts";
import { Dashboard } from "./pages/Dashboard";
import { VolumesPage } from "./pages/Volumes";
import { VolumeDetail } from "./pages/VolumeDetail";
import { NodesPage } from "./pages/Nodes";
import { SettingsPage } from "./pages/Settings";
import { EngineImagesPage } from "./pages/EngineImages";
import { InstanceManagersPage } from "./pages/InstanceManagers";
import { RecurringJobsPage } from "./pages/RecurringJobs";
import { BackupsPage } from "./pages/Backups";
import { EventsPage } from "./pages/Events";

export const NAV: { to: string; label: string }[] = [
  { to: "/dashboard", label: "Dashboard" },
  { to: "/volume", label: "Volumes" },
  { to: "/node", label: "Nodes" },
  { to: "/backup", label: "Backups" },
  { to: "/recurringjob", label: "Recurring Jobs" },
  { to: "/engineimage", label: "Engine Images" },
  { to: "/instancemanager", label: "Instance Managers" },
  { to: "/event", label: "Events" },
  { to: "/setting", label: "Settings" },
];

function Layout() {
  const [menu, setMenu] = useState(false);
  return (
    <div className="app">
      <a className="skip" href="#main">
        Skip to content
      </a>
      <header className="topbar">
        <button type="button" className="menu-toggle" aria-expanded={menu} aria-controls="nav" onClick={() => setMenu(!menu)}>
          Menu
        </button>
        <span className="brand">Longhorn</span>
        <nav id="nav" className={menu ? "open" : undefined} aria-label="Main">
          {NAV.map((n) => (
            <NavLink key={n.to} to={n.to} onClick={() => setMenu(false)}>
              {n.label}
            </NavLink>
          ))}
        </nav>
        <LiveDot />
      </header>
      <ConnectionBanner />
      <main id="main" tabIndex={-1}>
        <Outlet />
      </main>
    </div>
  );
}

function RouteError() {
  const err = useRouteError() as { statusText?: string; message?: string } | null;
  return (
    <div className="page">
      <h1>Page not found</h1>
      <p>{err?.statusText ?? err?.message ?? "This page does not exist."}</p>
      <NavLink to="/dashboard">Go to the dashboard</NavLink>
    </div>
  );
}

export const routes = [
  {
    path: "/",
    element: <Layout />,
    errorElement: <RouteError />,
    children: [
      { index: true, element: <Navigate to="/dashboard" replace /> },
      { path: "dashboard", element: <Dashboard /> },
      { path: "volume", element: <VolumesPage /> },
      { path: "volume/:name", element: <VolumeDetail /> },
      { path: "node", element: <NodesPage /> },
      { path: "setting", element: <SettingsPage /> },
      { path: "engineimage", element: <EngineImagesPage /> },
      { path: "instancemanager", element: <InstanceManagersPage /> },
      { path: "recurringjob", element: <RecurringJobsPage /> },
      { path: "backup", element: <BackupsPage /> },
      { path: "event", element: <EventsPage /> },
    ],
  },
];

export function App() {
  const router = createHashRouter(routes);
  return (
    <ToastProvider>
      <RouterProvider router={router} />
    </ToastProvider>
  );
}
